// Channel benchmarks: coral::channel against asio::experimental::channel / concurrent_channel
// doing the same work in the same run.
//   channel_pingpong  two tasks, one thread, rendezvous channels, round trips
//   channel_buffered  one producer, one consumer, one thread, capacity 64
//   channel_mpmc      4 producers, 4 consumers, 2-thread pool, capacity 64
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "report.hpp"

namespace asio = boost::asio;
using asio_channel = asio::experimental::channel<void(boost::system::error_code, long)>;
using asio_concurrent_channel = asio::experimental::concurrent_channel<void(boost::system::error_code, long)>;

namespace {

// ---- ping-pong
double coral_pingpong(long trips) {
  return ns_per(2 * trips, [&] {
    asio::io_context ctx(1);
    coral::channel<long> ping(0), pong(0);
    coral::spawn(ctx, [&]() -> coral::task<> {
      for (long i = 0; i < trips; ++i) {
        co_await ping.send(i);
        check(co_await pong.receive() == i, "pong");
      }
    });
    coral::spawn(ctx, [&]() -> coral::task<> {
      for (long i = 0; i < trips; ++i) co_await pong.send(co_await ping.receive());
    });
    ctx.run();
  });
}

double asio_pingpong(long trips) {
  return ns_per(2 * trips, [&] {
    asio::io_context ctx(1);
    asio_channel ping(ctx, 0), pong(ctx, 0);
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
          for (long i = 0; i < trips; ++i) {
            co_await ping.async_send(boost::system::error_code{}, i, asio::use_awaitable);
            check(co_await pong.async_receive(asio::use_awaitable) == i, "pong");
          }
        },
        asio::detached);
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
          for (long i = 0; i < trips; ++i) {
            long v = co_await ping.async_receive(asio::use_awaitable);
            co_await pong.async_send(boost::system::error_code{}, v, asio::use_awaitable);
          }
        },
        asio::detached);
    ctx.run();
  });
}

// ---- buffered, single thread
double coral_buffered(long n) {
  return ns_per(n, [&] {
    asio::io_context ctx(1);
    coral::channel<long> ch(64);
    long sum = 0;
    coral::spawn(ctx, [&]() -> coral::task<> {
      for (long i = 0; i < n; ++i) co_await ch.send(i);
    });
    coral::spawn(ctx, [&]() -> coral::task<> {
      for (long i = 0; i < n; ++i) sum += co_await ch.receive();
    });
    ctx.run();
    check(sum == n * (n - 1) / 2, "buffered sum");
  });
}

double asio_buffered(long n) {
  return ns_per(n, [&] {
    asio::io_context ctx(1);
    asio_channel ch(ctx, 64);
    long sum = 0;
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
          for (long i = 0; i < n; ++i) co_await ch.async_send(boost::system::error_code{}, i, asio::use_awaitable);
        },
        asio::detached);
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
          for (long i = 0; i < n; ++i) sum += co_await ch.async_receive(asio::use_awaitable);
        },
        asio::detached);
    ctx.run();
    check(sum == n * (n - 1) / 2, "buffered sum");
  });
}

// ---- MPMC on a 2-thread pool; each consumer stops at a -1 sentinel
constexpr int producers = 4, consumers = 4;

double coral_mpmc(long n) {
  return ns_per(n, [&] {
    asio::thread_pool pool(2);
    coral::channel<long> ch(64);
    std::atomic<int> producing{producers};
    std::atomic<long> sum{0};
    std::vector<coral::job<>> jobs;
    for (int p = 0; p < producers; ++p) {
      jobs.push_back(coral::spawn(pool, [&, p]() -> coral::task<> {
        for (long v = p; v < n; v += producers) co_await ch.send(v);
        if (--producing == 0) {
          for (int c = 0; c < consumers; ++c) co_await ch.send(-1);
        }
      }));
    }
    for (int c = 0; c < consumers; ++c) {
      jobs.push_back(coral::spawn(pool, [&]() -> coral::task<> {
        long local = 0;
        for (long v; (v = co_await ch.receive()) >= 0;) local += v;
        sum += local;
      }));
    }
    for (auto& j : jobs) j.wait();
    check(sum == n * (n - 1) / 2, "mpmc sum");
  });
}

double asio_mpmc(long n) {
  return ns_per(n, [&] {
    asio::thread_pool pool(2);
    asio_concurrent_channel ch(pool, 64);
    std::atomic<int> producing{producers};
    std::atomic<long> sum{0};
    for (int p = 0; p < producers; ++p) {
      asio::co_spawn(
          pool,
          [&, p]() -> asio::awaitable<void> {
            for (long v = p; v < n; v += producers)
              co_await ch.async_send(boost::system::error_code{}, v, asio::use_awaitable);
            if (--producing == 0) {
              for (int c = 0; c < consumers; ++c)
                co_await ch.async_send(boost::system::error_code{}, -1, asio::use_awaitable);
            }
          },
          asio::detached);
    }
    for (int c = 0; c < consumers; ++c) {
      asio::co_spawn(
          pool,
          [&]() -> asio::awaitable<void> {
            long local = 0;
            for (long v; (v = co_await ch.async_receive(asio::use_awaitable)) >= 0;) local += v;
            sum += local;
          },
          asio::detached);
    }
    pool.join();
    check(sum == n * (n - 1) / 2, "mpmc sum");
  });
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = argc > 1 ? std::atof(argv[1]) : 1.0;  // < 1 for a quick run
  const long trips = static_cast<long>(1'000'000 * scale);
  const long buffered = static_cast<long>(10'000'000 * scale);
  const long mpmc = static_cast<long>(4'000'000 * scale);
  const int rounds = 3;  // best of

  double cp = 1e300, ap = 1e300, cb = 1e300, ab = 1e300, cm = 1e300, am = 1e300;
  for (int r = 0; r < rounds; ++r) {
    cp = std::min(cp, coral_pingpong(trips));
    ap = std::min(ap, asio_pingpong(trips));
    cb = std::min(cb, coral_buffered(buffered));
    ab = std::min(ab, asio_buffered(buffered));
    cm = std::min(cm, coral_mpmc(mpmc));
    am = std::min(am, asio_mpmc(mpmc));
  }
  report("channel_pingpong", cp, ap, "ns/message");
  report("channel_buffered", cb, ab, "ns/message");
  report("channel_mpmc", cm, am, "ns/message");
  std::printf(
      "summary: pingpong ratio=%.3f (target <= 0.2), buffered ratio=%.3f (target <= 0.2), "
      "mpmc ratio=%.3f (target <= 0.5)\n",
      cp / ap, cb / ab, cm / am);
}
