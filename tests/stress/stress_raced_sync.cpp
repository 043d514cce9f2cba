#define BOOST_TEST_MODULE coral raced lock stress
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "../test_support.hpp"

// Lossless races of locks, permits and event waits, proven by counting: tasks on a thread pool
// (with and without strands), a 2-thread io_context and the default executors race m.scoped_lock(),
// sem.scoped_acquire() and ev.wait() against short timeouts and against each other, with when_any,
// with_timeout, `||` and when_all, while a task toggles the event and the test cancels workers at
// random moments. Whoever holds the mutex or a permit says so in a counter (never more than one
// mutex holder, never more holders than permits). Afterwards every permit is back, the mutex is
// free, and no waiter is left queued: a waiter left behind would be handed the permits and the
// lock taken and given back here, or woken by the last set(), after its frame is gone.

using namespace coral_test;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t permit_count = 2;

struct world {
  coral::async_mutex m;
  coral::semaphore permits{permit_count};
  coral::event ev;
  std::atomic<int> mutex_holders{0}, permit_holders{0};
  std::atomic<long> broken{0};
  std::atomic<long> locks_won{0}, locks_lost{0}, acquires_won{0}, acquires_lost{0}, waits_won{0}, waits_lost{0};

  // Holding: says so, lets other tasks run, and says it no longer holds (before the guard or the
  // permit, a parameter, goes; also when the task is cancelled in its yield).
  struct holding {
    std::atomic<int>& holders;
    ~holding() { --holders; }
  };
  coral::task<> hold_lock(coral::async_mutex_lock guard, bool yield) {
    if (!guard.owns_lock() || ++mutex_holders != 1) ++broken;
    holding h{mutex_holders};
    if (yield) co_await coral::yield();
  }
  coral::task<> hold_permit(coral::semaphore_permit, bool yield) {  // (held until the task ends)
    if (++permit_holders > static_cast<int>(permit_count)) ++broken;
    holding h{permit_holders};
    if (yield) co_await coral::yield();
  }
};

std::chrono::microseconds short_deadline(std::mt19937& rng) {
  return std::chrono::microseconds(rng() % 200);
}

coral::task<> race(world& w, unsigned seed, long rounds) {
  std::mt19937 rng(seed);
  for (long i = 0; i < rounds; ++i) {
    const bool yield = rng() % 2 == 0;
    switch (rng() % 6) {
      case 0:
        try {
          co_await w.hold_lock(co_await coral::with_timeout(short_deadline(rng), w.m.scoped_lock()), yield);
          ++w.locks_won;
        } catch (const coral::timeout_error&) {
          ++w.locks_lost;
        }
        break;
      case 1: {
        auto r = co_await coral::when_any(w.m.scoped_lock(), w.permits.scoped_acquire(), short_deadline(rng));
        if (r.index() == 0) co_await w.hold_lock(std::get<0>(std::move(r)), yield);
        if (r.index() == 1) co_await w.hold_permit(std::get<1>(std::move(r)), yield);
        (r.index() == 0 ? w.locks_won : w.locks_lost)++;
        break;
      }
      case 2: {
        auto r = co_await (w.permits.scoped_acquire() || short_deadline(rng));
        if (r.index() == 0) {
          co_await w.hold_permit(std::get<0>(std::move(r)), yield);
          ++w.acquires_won;
        } else {
          ++w.acquires_lost;
        }
        break;
      }
      case 3: {
        auto r = co_await coral::when_any(w.ev.wait(), w.permits.scoped_acquire(), short_deadline(rng));
        (r.index() == 0 ? w.waits_won : w.waits_lost)++;
        if (r.index() == 1) co_await w.hold_permit(std::get<1>(std::move(r)), yield);
        break;
      }
      case 4:
        try {
          co_await coral::with_timeout(short_deadline(rng), w.ev.wait());
          ++w.waits_won;
        } catch (const coral::timeout_error&) {
          ++w.waits_lost;
        }
        break;
      case 5:
        // Both at once, each may wait for the other's holder: the deadline breaks the cycle (and
        // a lock or permit the join had already taken goes back with its result).
        try {
          co_await coral::with_timeout(short_deadline(rng), [&]() -> coral::task<> {
            auto [guard, permit] = co_await coral::when_all(w.m.scoped_lock(), w.permits.scoped_acquire());
            co_await w.hold_permit(std::move(permit), false);
            co_await w.hold_lock(std::move(guard), yield);
          }());
        } catch (const coral::timeout_error&) {
        }
        break;
    }
  }
}

coral::task<> toggle(world& w, std::atomic<bool>& stop) {
  std::mt19937 rng(99);
  while (!stop.load()) {
    w.ev.set();
    co_await coral::sleep_for(std::chrono::microseconds(rng() % 100));
    w.ev.reset();
    co_await coral::sleep_for(std::chrono::microseconds(rng() % 300));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(raced_locks_permits_and_event_waits_take_nothing_when_they_lose_on_every_executor_kind) {
  const long rounds = workload_size("CORAL_STRESS_RACED_SYNC_ROUNDS", 20'000);
  world w;
  {
    running_io_context io(2);
    asio::thread_pool pool(2);
    const std::vector<asio::any_io_executor> executors{io.get_executor(), pool.get_executor(),
                                                       asio::make_strand(pool.get_executor()), coral::pool_executor{}};
    std::atomic<bool> stop{false};
    auto toggler = coral::spawn(io.get_executor(), toggle(w, stop));
    std::vector<coral::job<>> workers;
    for (unsigned i = 0; i < 8; ++i)
      workers.push_back(coral::spawn(executors[i % executors.size()], race(w, i, rounds)));
    // Two more, cancelled at random moments and started again.
    std::mt19937 rng(7);
    for (unsigned k = 0; k < 40; ++k) {
      auto victim = coral::spawn(executors[k % executors.size()], race(w, 100 + k, rounds));
      // (Cancelled from a timer of its own, at a random moment: no thread of the test sleeps.)
      asio::steady_timer at(io.get_executor(), std::chrono::microseconds(rng() % 3000));
      at.async_wait([victim](boost::system::error_code) mutable { victim.cancel(); });
      BOOST_REQUIRE(victim.wait_for(patience));
    }
    for (auto& j : workers) BOOST_REQUIRE(j.wait_for(workload_patience));
    for (auto& j : workers) j.get_result();
    stop = true;
    BOOST_REQUIRE(toggler.wait_for(patience));
  }
  BOOST_TEST_MESSAGE("locks won " << w.locks_won << ", lost " << w.locks_lost << "; acquires won " << w.acquires_won
                                  << ", lost " << w.acquires_lost << "; waits won " << w.waits_won << ", lost "
                                  << w.waits_lost);
  BOOST_TEST(w.broken == 0);
  BOOST_TEST(w.mutex_holders == 0);
  BOOST_TEST(w.permit_holders == 0);
  // Every outcome happened, or nothing was raced.
  for (long n : {w.locks_won.load(), w.locks_lost.load(), w.acquires_won.load(), w.acquires_lost.load(),
                 w.waits_won.load(), w.waits_lost.load()}) {
    BOOST_TEST(n > 0);
  }
  BOOST_TEST(w.permits.available() == permit_count);
  BOOST_TEST_REQUIRE(w.m.try_lock());  // free, and nobody waits for it: unlocking keeps it free
  w.m.unlock();
  BOOST_TEST(w.m.try_lock());
  w.m.unlock();
  for (std::size_t i = 0; i < permit_count; ++i) BOOST_TEST_REQUIRE(w.permits.try_acquire());
  w.permits.release(permit_count);  // to nobody: no waiter is left
  BOOST_TEST(w.permits.available() == permit_count);
  w.ev.set();  // wakes nobody
}
