#define BOOST_TEST_MODULE coral select stress
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <random>
#include <vector>

#include "../test_support.hpp"

// Lossless select, proven by counting: producers offer each value to two random channels at once
// (or to one, with a timeout), with short deadlines that often win; consumers receive from two
// random channels at once (or from one, with a timeout), also against short deadlines. Tasks run
// on every executor kind. Every value must be received exactly once: a losing receive that
// consumed a value, or a losing send that delivered one, shows as a value missing or received
// twice. Every value object must be destroyed.

using namespace coral_test;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct item : lifetime {
  long id;
  explicit item(long i) : id(i) {}
};

constexpr int channel_count = 3;
constexpr int producers = 4;
constexpr int consumers = 4;

struct world {
  explicit world(long total) : received(static_cast<std::size_t>(total)) {
    for (std::size_t capacity : {0u, 1u, 4u}) channels.emplace_back(capacity);
  }
  std::vector<coral::channel<item>> channels;
  std::vector<std::atomic<int>> received;
  std::atomic<long> send_timeouts{0};
  std::atomic<long> receive_timeouts{0};

  void record(const item& v) { ++received[static_cast<std::size_t>(v.id)]; }
};

std::chrono::microseconds short_deadline(std::mt19937& rng) {
  return std::chrono::microseconds(rng() % 300);
}

std::pair<int, int> two_channels(std::mt19937& rng) {
  const int a = static_cast<int>(rng() % channel_count);
  return {a, (a + 1 + static_cast<int>(rng() % (channel_count - 1))) % channel_count};
}

coral::task<> produce(world& w, long first, long total, unsigned seed) {
  std::mt19937 rng(seed);
  for (long id = first; id < total; id += producers) {
    for (;;) {
      auto [a, b] = two_channels(rng);
      if (rng() % 4 == 0) {
        try {
          co_await coral::with_timeout(short_deadline(rng), w.channels[a].send(item(id)));
          break;
        } catch (const coral::timeout_error&) {
        }
      } else {
        auto r =
            co_await coral::when_any(w.channels[a].send(item(id)), w.channels[b].send(item(id)), short_deadline(rng));
        if (r.index() != 2) break;
      }
      ++w.send_timeouts;
    }
  }
}

coral::task<> consume(world& w, unsigned seed) {
  std::mt19937 rng(seed);
  try {
    for (;;) {
      auto [a, b] = two_channels(rng);
      if (rng() % 4 == 0) {
        try {
          w.record(co_await coral::with_timeout(short_deadline(rng), w.channels[a].receive()));
          continue;
        } catch (const coral::timeout_error&) {
        }
      } else {
        auto r = co_await coral::when_any(w.channels[a].receive(), w.channels[b].receive(), short_deadline(rng));
        if (r.index() == 0) w.record(std::get<0>(r));
        if (r.index() == 1) w.record(std::get<1>(r));
        if (r.index() != 2) continue;
      }
      ++w.receive_timeouts;
    }
  } catch (const coral::channel_closed&) {
    // The producers are done and a channel is drained; the main thread takes what is left.
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(racing_sends_and_receives_against_timeouts_on_every_executor_kind_loses_nothing) {
  const long total = workload_size("CORAL_STRESS_SELECT_VALUES", 100'000);
  {
    world w(total);
    running_io_context io(2);
    asio::thread_pool pool(2);
    coral::event_loop loop;
    const std::vector<asio::any_io_executor> executors{io.get_executor(), pool.get_executor(),
                                                       asio::make_strand(pool.get_executor()), coral::pool_executor{},
                                                       loop.get_executor()};
    std::vector<coral::job<>> sending, receiving;
    for (int p = 0; p < producers; ++p) {
      sending.push_back(coral::spawn(executors[p % executors.size()], produce(w, p, total, 100 + p)));
    }
    for (int c = 0; c < consumers; ++c) {
      receiving.push_back(coral::spawn(executors[(c + 2) % executors.size()], consume(w, 200 + c)));
    }
    for (auto& j : sending) BOOST_REQUIRE(j.wait_for(std::chrono::minutes(5)));
    for (auto& j : sending) j.get_result();
    for (auto& ch : w.channels) ch.close();
    for (auto& j : receiving) BOOST_REQUIRE(j.wait_for(patience));
    for (auto& j : receiving) j.get_result();
    for (auto& ch : w.channels) {
      while (auto v = ch.try_receive()) w.record(*v);
    }

    long missing = 0, duplicated = 0;
    for (auto& r : w.received) {
      if (r == 0) ++missing;
      if (r > 1) ++duplicated;
    }
    BOOST_TEST_MESSAGE(total << " values; sends timed out " << w.send_timeouts << " times, receives "
                             << w.receive_timeouts << " times");
    BOOST_TEST(missing == 0);
    BOOST_TEST(duplicated == 0);
    // The deadlines must have won often, or nothing was raced.
    BOOST_TEST(w.send_timeouts > 0);
    BOOST_TEST(w.receive_timeouts > 0);
  }
  BOOST_TEST(lifetime::alive == 0);
}
