// when_all_10: awaiting 10 child tasks that complete at once, coral::when_all vs
// asio::experimental::make_parallel_group over 10 co_spawned awaitables (wait_for_all).
// timeout_op: an operation that finishes first (one re-queue on the executor) raced against a 1 s
// timeout, coral::with_timeout vs `op() || timer.async_wait(use_awaitable)` (awaitable operators).
// select_2: a consumer selects over two unbuffered channels fed by two producers, time per select:
// coral::when_any(ch1.receive(), ch2.receive()) vs a parallel_group of two
// asio::experimental::channel receives (wait_for_one). The Asio way loses values (a receive that
// completed while the other won is discarded; here nearly every round), so it needs fewer selects
// for the same producers: the count lost is printed beside the figure.
// select_2_waiting: the same, with each producer yielding to the executor before each send (coral::yield vs
// a post), so that selects mostly find both channels empty and wait.
// All on a single-threaded io_context.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "report.hpp"
#include "task_workloads.hpp"

namespace asio = boost::asio;
using namespace task_workloads;
using namespace std::chrono_literals;

namespace {

// `pause`: the producer lets the executor's queue run before each send, so that the consumer
// mostly finds both channels empty and its select waits.
coral::task<> coral_produce(coral::channel<long>& ch, long n, bool pause) {
  for (long i = 1; i <= n; ++i) {
    if (pause) co_await coral::yield();
    co_await ch.send(i);
  }
  ch.close();
}

// Receives until both channels are closed and drained; returns the sum of what it received.
coral::task<long> coral_select_consumer(coral::channel<long>& first, coral::channel<long>& second, long& selects) {
  long sum = 0;
  coral::channel<long>* rest = nullptr;
  for (;;) {
    try {
      ++selects;
      auto r = co_await coral::when_any(first.receive(), second.receive());
      sum += r.index() == 0 ? std::get<0>(r) : std::get<1>(r);
    } catch (const coral::channel_closed&) {
      rest = first.closed() && first.size() == 0 ? &second : &first;
      break;
    }
  }
  while (auto v = co_await rest->next()) sum += *v;
  co_return sum;
}

using asio_channel = asio::experimental::channel<void(boost::system::error_code, long)>;

asio::awaitable<void> asio_produce(asio_channel& ch, long n, bool pause) {
  for (long i = 1; i <= n; ++i) {
    if (pause) co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    co_await ch.async_send(boost::system::error_code(), i, asio::use_awaitable);
  }
  ch.close();
}

asio::awaitable<long> asio_select_consumer(asio_channel& first, asio_channel& second, long& received, long& selects) {
  long sum = 0;
  asio_channel* rest = nullptr;
  for (;;) {
    ++selects;
    auto [order, e1, v1, e2, v2] = co_await asio::experimental::make_parallel_group(
                                       first.async_receive(asio::deferred), second.async_receive(asio::deferred))
                                       .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
    const auto& e = order[0] == 0 ? e1 : e2;
    if (e) {
      rest = order[0] == 0 ? &second : &first;
      break;
    }
    sum += order[0] == 0 ? v1 : v2;
    ++received;
  }
  for (;;) {
    auto [e, v] = co_await rest->async_receive(asio::as_tuple(asio::use_awaitable));
    if (e) break;
    sum += v;
    ++received;
  }
  co_return sum;
}

void compare_select(const char* name, long n, bool pause) {
  long coral_sum = 0, asio_received = 0, coral_selects = 0, asio_selects = 0;
  const double c = ns_per(1, [&] {
    asio::io_context ctx(1);
    coral::channel<long> first, second;
    coral::spawn(ctx, coral_produce(first, n, pause), asio::detached);
    coral::spawn(ctx, coral_produce(second, n, pause), asio::detached);
    auto j = coral::spawn(ctx, coral_select_consumer(first, second, coral_selects));
    ctx.run();
    coral_sum = j.get_result();
  });
  const double a = ns_per(1, [&] {
    asio::io_context ctx(1);
    asio_channel first(ctx), second(ctx);
    asio::co_spawn(ctx, asio_produce(first, n, pause), asio::detached);
    asio::co_spawn(ctx, asio_produce(second, n, pause), asio::detached);
    asio::co_spawn(ctx, asio_select_consumer(first, second, asio_received, asio_selects), asio::detached);
    ctx.run();
  });
  check(coral_sum == n * (n + 1), "select: coral received every value once");
  report(name, c / static_cast<double>(coral_selects), a / static_cast<double>(asio_selects), "ns/select");
  std::printf("note: %s asio lost %ld of %ld values (coral lost none)\n", name, 2 * n - asio_received, 2 * n);
}

template <class CoralLoop, class AsioLoop>
void compare(const char* name, long n, long expected, CoralLoop coral_loop, AsioLoop asio_loop) {
  long coral_sum = 0, asio_sum = 0;
  const double c = ns_per(n, [&] {
    asio::io_context ctx(1);
    auto j = coral::spawn(ctx, coral_loop(n));
    ctx.run();
    coral_sum = j.get_result();
  });
  const double a = ns_per(n, [&] {
    asio::io_context ctx(1);
    asio::co_spawn(ctx, asio_loop(n), [&](std::exception_ptr e, long v) {
      if (e) std::abort();
      asio_sum = v;
    });
    ctx.run();
  });
  check(coral_sum == expected && asio_sum == expected, name);
  report(name, c, a, "ns/op");
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 200'000;
  const std::string only = argc > 2 ? argv[2] : "";  // one case, for profiling
  if (only.empty() || only == "when_all_10") compare("when_all_10", n, 55 * n, coral_when_all_loop, asio_when_all_loop);
  if (only.empty() || only == "timeout_op") compare("timeout_op", n, n, coral_timeout_loop, asio_timeout_loop);
  if (only.empty() || only == "select_2") compare_select("select_2", n, false);
  if (only.empty() || only == "select_2_waiting") compare_select("select_2_waiting", n, true);
  std::printf(
      "summary: targets when_all_10 <= 0.3, timeout_op <= 0.5, select_2 <= 0.5 (select_2_waiting: no target)\n");
}
