#define BOOST_TEST_MODULE coral timeout stress
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>
#include <random>
#include <thread>
#include <vector>

#include "../test_support.hpp"

// Tasks run long random sequences of timeouts (with_timeout's deadline watch, kept armed from one
// timeout to the next) around sleeps, channel sends and receives and when_any races, on every kind
// of executor, while the test cancels some of them and destroys contexts with timeouts pending.
// A timeout never ends before its deadline, no value is lost or made up, a cancelled task never
// hears a timeout, and everything is freed.

using namespace coral_test;
namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

struct item : lifetime {
  long id = 0;
  explicit item(long i) : id(i) {}
};

struct tally {
  std::atomic<long> sent{0}, received{0}, timeouts{0}, early{0}, wrong_value{0};
};

coral::task<long> sleepy(std::chrono::microseconds d, long v) {
  lifetime l;
  co_await coral::sleep_for(d);
  co_return v;
}

std::chrono::microseconds pick(std::mt19937& r) {
  using namespace std::chrono;
  static const microseconds choices[] = {0us, 1us, 100us, 1000us, 3000us, 5000us, duration_cast<microseconds>(1h)};
  return choices[r() % std::size(choices)];
}

enum class kind { sleep, receive, send, receive_in_task, race, timed_race, count };

// `rounds` timeouts in a row, each around one operation.
coral::task<> worker(unsigned seed, coral::channel<item>& ch, tally& t, int rounds) {
  std::mt19937 r(seed);
  for (int i = 0; i < rounds; ++i) {
    auto limit = pick(r);
    auto op = pick(r);
    if (op > 1s) op = 2000us;
    const auto k = static_cast<kind>(r() % static_cast<unsigned>(kind::count));
    if (k != kind::sleep && limit > 1s) limit = 5000us;  // (nobody may be on the other side)
    const auto start = clock_type::now();
    try {
      switch (k) {
        case kind::sleep:
          if (co_await coral::with_timeout(limit, sleepy(op, i)) != i) ++t.wrong_value;
          break;
        case kind::receive: {
          auto got = co_await coral::with_timeout(limit, ch.receive());
          ++t.received;
          (void)got;
          break;
        }
        case kind::receive_in_task: {
          // A task's receive handed a value just after the deadline: the value is returned.
          co_await coral::with_timeout(limit, [&]() -> coral::task<long> {
            auto got = co_await ch.receive();
            co_return got.id;
          }());
          ++t.received;
          break;
        }
        case kind::send:
          co_await coral::with_timeout(limit, ch.send(item(i)));
          ++t.sent;
          break;
        case kind::race: {
          // Both branches on this task's executor: the loser is cancelled on the spot. A channel
          // operation in a race takes a value only if it wins (a task wrapping it could lose one).
          auto won = co_await coral::with_timeout(limit, [&]() -> coral::task<long> {
            auto w = co_await coral::when_any(sleepy(op, i), ch.receive());
            if (w.index() == 1) ++t.received;
            co_return w.index() == 0 ? std::get<0>(w) : i;
          }());
          if (won != i) ++t.wrong_value;
          break;
        }
        case kind::timed_race: {
          // A timeout inside a race inside a timeout: two watches at once, on two segments.
          auto nap = [&]() -> coral::task<long> {
            try {
              co_return co_await coral::with_timeout(op, sleepy(op * 2, i));
            } catch (const coral::timeout_error&) {
              co_return -1;
            }
          };
          co_await coral::with_timeout(limit, [&]() -> coral::task<> {
            auto v = co_await coral::when_any(ch.receive(), nap());
            if (v.index() == 0) ++t.received;
          }());
          break;
        }
        case kind::count:
          break;
      }
    } catch (const coral::timeout_error&) {
      ++t.timeouts;
      if (clock_type::now() - start < limit) ++t.early;
    }
  }
}

// Spawns `tasks` workers on `ex`, cancels every third at a random moment, and checks the outcome.
template <class Executor>
void run_round(Executor ex, int tasks, int rounds, unsigned seed) {
  tally t;
  coral::channel<item> ch(4);
  std::vector<coral::job<void>> jobs;
  for (int i = 0; i < tasks; ++i) jobs.push_back(coral::spawn(ex, worker(seed * 131 + i, ch, t, rounds)));
  std::mt19937 r(seed);
  std::this_thread::sleep_for(std::chrono::microseconds(r() % 3000));  // (a random moment, not a wait)
  for (int i = 0; i < tasks; i += 3) jobs[i].cancel();
  for (int i = 0; i < tasks; ++i) {
    BOOST_TEST_REQUIRE(jobs[i].wait_for(workload_patience));
    try {
      jobs[i].get_result();  // (an uncancelled task ends normally: no timeout escapes)
    } catch (const coral::timeout_error& e) {
      BOOST_TEST(false, "task " << i << " let a timeout escape: " << e.what());
    } catch (const boost::system::system_error& e) {
      BOOST_TEST((i % 3 == 0 && e.code() == asio::error::operation_aborted), "task " << i << ": " << e.what());
    }
  }
  ch.close();
  while (ch.try_receive()) ++t.received;  // what is still buffered
  BOOST_TEST(t.early.load() == 0);
  BOOST_TEST(t.wrong_value.load() == 0);
  BOOST_TEST(t.sent.load() == t.received.load());
  BOOST_TEST_MESSAGE("timeouts: " << t.timeouts.load() << ", values: " << t.sent.load());
}

constexpr int iterations = 4;

}  // namespace

BOOST_AUTO_TEST_CASE(timeouts_on_io_context_with_one_thread) {
  for (int it = 0; it < iterations; ++it) {
    asio::io_context io(1);
    auto guard = asio::make_work_guard(io);
    std::jthread runner([&] { io.run(); });
    run_round(io.get_executor(), 8, 60, it);
    guard.reset();
  }
  BOOST_TEST(lifetime::alive.load() == 0);
}

BOOST_AUTO_TEST_CASE(timeouts_on_io_context_with_four_threads) {
  for (int it = 0; it < iterations; ++it) {
    asio::io_context io(4);
    auto guard = asio::make_work_guard(io);
    std::vector<std::jthread> runners;
    for (int i = 0; i < 4; ++i) runners.emplace_back([&] { io.run(); });
    run_round(io.get_executor(), 12, 60, it + 100);
    guard.reset();
  }
  BOOST_TEST(lifetime::alive.load() == 0);
}

BOOST_AUTO_TEST_CASE(timeouts_on_a_thread_pool_with_and_without_a_strand) {
  for (int it = 0; it < iterations; ++it) {
    asio::thread_pool pool(3);
    run_round(asio::make_strand(pool), 8, 60, it + 200);
    run_round(pool.get_executor(), 8, 60, it + 300);
    pool.join();
  }
  BOOST_TEST(lifetime::alive.load() == 0);
}

BOOST_AUTO_TEST_CASE(timeouts_on_the_default_executors) {
  for (int it = 0; it < iterations; ++it) {
    run_round(coral::pool_executor(), 8, 60, it + 400);
    run_round(coral::loop_executor(), 6, 60, it + 500);
  }
  BOOST_TEST(lifetime::alive.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_context_destroyed_with_timeouts_pending_frees_everything) {
  for (int it = 0; it < 2 * iterations; ++it) {
    {
      tally t;
      coral::channel<item> ch(2);
      asio::io_context io(2);
      std::vector<coral::job<void>> jobs;
      for (int i = 0; i < 10; ++i) jobs.push_back(coral::spawn(io.get_executor(), worker(it * 7 + i, ch, t, 1000)));
      std::jthread other([&] { io.run_for(std::chrono::milliseconds(2 + it % 5)); });
      io.run_for(std::chrono::milliseconds(2 + it % 5));
      other.join();
      // (the context goes first, with the tasks suspended in it; then the channel)
    }
    BOOST_TEST(lifetime::alive.load() == 0);
  }
}
