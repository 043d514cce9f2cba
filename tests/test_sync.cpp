#define BOOST_TEST_MODULE coral sync
#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/test/unit_test.hpp>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

// One task per primitive waiting on it, each recording where it stands.
struct waiting_on_each {
  coral::async_mutex mutex;
  coral::semaphore permits{0};
  coral::event flag;
  waiting_on_each() { BOOST_REQUIRE(mutex.try_lock()); }

  template <class Executor>
  std::vector<coral::job<std::string>> spawn_waiters(Executor ex);
};

// Waits on one of w's primitives (0: lock, 1: acquire, 2: event) and says how that went.
coral::task<std::string> wait_on(waiting_on_each& w, int which) {
  lifetime l;
  try {
    if (which == 0) auto guard = co_await w.mutex.scoped_lock();
    if (which == 1) co_await w.permits.acquire();
    if (which == 2) co_await w.flag.wait();
  } catch (const boost::system::system_error& e) {
    co_return outcome_of(e);
  }
  co_return "ok";
}

template <class Executor>
std::vector<coral::job<std::string>> waiting_on_each::spawn_waiters(Executor ex) {
  std::vector<coral::job<std::string>> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(coral::spawn(ex, wait_on(*this, i)));
  return jobs;
}

}  // namespace

namespace {

// How a test's tasks take a lock or permit: as std::mutex users write it (`co_await m.lock(); ...
// m.unlock();`) or with the guard (`auto g = co_await m.scoped_lock();`).
enum class lock_style { std_style, scoped };
constexpr lock_style lock_styles[] = {lock_style::std_style, lock_style::scoped};

// Tasks (one executor each, from `executor_of(i)`) increment a plain int under the mutex, reading
// it, suspending, then writing it back: without mutual exclusion increments are lost. Also counts
// how many are inside at once. Afterwards the mutex admits exactly one holder.
template <class ExecutorOf>
void check_mutual_exclusion(ExecutorOf executor_of, int tasks, int rounds) {
  for (const lock_style style : lock_styles) {
    coral::async_mutex m;
    int counter = 0;
    std::atomic<int> inside{0}, peak{0};
    std::vector<coral::job<>> jobs;
    for (int t = 0; t < tasks; ++t) {
      jobs.push_back(coral::spawn(executor_of(t), [&, rounds, style]() -> coral::task<> {
        for (int r = 0; r < rounds; ++r) {
          std::optional<coral::async_mutex_lock> guard;
          if (style == lock_style::std_style) {
            co_await m.lock();
          } else {
            guard.emplace(co_await m.scoped_lock());
          }
          const int now = ++inside;
          for (int seen = peak.load(); now > seen && !peak.compare_exchange_weak(seen, now);) {
          }
          int seen = counter;
          if (r % 4 == 0) co_await coral::yield();  // other tasks run meanwhile
          counter = seen + 1;
          --inside;
          if (style == lock_style::std_style) m.unlock();
        }
      }));
    }
    for (auto& j : jobs) get_within(j);
    BOOST_TEST(counter == tasks * rounds);
    BOOST_TEST(peak.load() == 1);
    BOOST_TEST(m.try_lock());
    BOOST_TEST(!m.try_lock());  // one holder, not two
    m.unlock();
    BOOST_CHECK_THROW(m.unlock(), std::logic_error);
  }
}

// Tasks hold one of a semaphore's permits in turn, suspending inside: never more at once than
// there are permits, and every permit is back afterwards.
template <class ExecutorOf>
void check_permits_bound_concurrency(ExecutorOf executor_of, int tasks, int rounds, std::size_t permits) {
  for (const lock_style style : lock_styles) {
    coral::semaphore s(permits);
    std::atomic<int> inside{0}, peak{0};
    std::vector<coral::job<>> jobs;
    for (int t = 0; t < tasks; ++t) {
      jobs.push_back(coral::spawn(executor_of(t), [&, rounds, style]() -> coral::task<> {
        for (int r = 0; r < rounds; ++r) {
          std::optional<coral::semaphore_permit> permit;
          if (style == lock_style::std_style) {
            co_await s.acquire();
          } else {
            permit.emplace(co_await s.scoped_acquire());
          }
          const int now = ++inside;
          for (int seen = peak.load(); now > seen && !peak.compare_exchange_weak(seen, now);) {
          }
          co_await coral::yield();
          --inside;
          if (style == lock_style::std_style) s.release();
        }
      }));
    }
    for (auto& j : jobs) get_within(j);
    BOOST_TEST(peak.load() <= static_cast<int>(permits));
    BOOST_TEST(peak.load() >= 1);
    BOOST_TEST(s.available() == permits);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(both_styles)

CORAL_TEST_CASE_ON_EACH_PLACE(std_style_and_scoped_locks_and_permits_bound_concurrency, every_place) {
  check_mutual_exclusion([&](int) { return place.get_executor(); }, 8, 200);
  check_permits_bound_concurrency([&](int) { return place.get_executor(); }, 12, 100, 3);
}

BOOST_AUTO_TEST_CASE(unlock_of_a_mutex_nobody_holds_throws_and_makes_no_second_holder) {
  coral::async_mutex m;
  BOOST_CHECK_THROW(m.unlock(), std::logic_error);
  BOOST_TEST(m.try_lock());
  BOOST_TEST(!m.try_lock());
  m.unlock();
  BOOST_CHECK_THROW(m.unlock(), std::logic_error);
  BOOST_TEST(m.try_lock());
  BOOST_TEST(!m.try_lock());
  m.unlock();
  // A guard whose lock was also unlocked by hand gives nothing back when it goes: it neither
  // throws from its destructor nor unlocks whoever holds the mutex by then.
  asio::io_context ctx(1);
  auto j = coral::spawn(ctx, [&]() -> coral::task<bool> {
    {
      auto guard = co_await m.scoped_lock();
      m.unlock();
      BOOST_TEST(m.try_lock());  // another holder now
    }
    const bool still_held = !m.try_lock();  // the guard went without unlocking it
    m.unlock();
    {
      auto guard = co_await m.scoped_lock();
      m.unlock();
    }  // the mutex is free when the guard goes
    co_return still_held;
  });
  ctx.run();
  BOOST_TEST(j.get_result());
  BOOST_TEST(m.try_lock());
  BOOST_TEST(!m.try_lock());
}

CORAL_TEST_CASE_ON_EACH_PLACE(std_style_raced_and_timed_locks_are_held_by_the_task_when_they_win, every_place) {
  coral::async_mutex m;
  coral::semaphore s(1);
  coral::event never;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    co_await coral::with_timeout(10s, m.lock());
    seen.push_back(m.try_lock() ? "free" : "held");
    try {
      co_await coral::with_timeout(5ms, m.lock());
      seen.push_back("locked twice");
    } catch (const coral::timeout_error&) {
      seen.push_back("timeout");
    }
    m.unlock();
    seen.push_back(m.try_lock() ? "free" : "held by the loser");
    m.unlock();

    auto raced = co_await coral::when_any(m.lock(), never.wait());
    seen.push_back(raced.index() == 0 && !m.try_lock() ? "won, held" : "not held");
    auto ored = co_await (s.acquire() || never.wait());
    seen.push_back(ored.index() == 0 && s.available() == 0 ? "acquired" : "no permit");
    const auto lost = co_await (s.acquire() || 5ms);
    seen.push_back(lost.index() == 1 && s.available() == 0 ? "slept" : "acquired twice");
    m.unlock();
    s.release();
    co_await (m.lock() && s.acquire());
    seen.push_back(!m.try_lock() && s.available() == 0 ? "both held" : "not both");
    m.unlock();
    s.release();
    co_await coral::when_any(coral::with_timeout(1s, m.lock()), never.wait());
    seen.push_back(!m.try_lock() ? "won inside, held" : "not held");
    m.unlock();
    auto [a, b] = co_await coral::when_all(m.lock(), s.acquire());
    static_assert(std::is_same_v<decltype(a), std::monostate> && std::is_same_v<decltype(b), std::monostate>);
    seen.push_back(!m.try_lock() && s.available() == 0 ? "both held" : "not both");
    m.unlock();
    s.release();
    co_return seen;
  });
  BOOST_TEST(
      get_within(std::move(j)) == (std::vector<std::string>{"held", "timeout", "free", "won, held", "acquired", "slept",
                                                            "both held", "won inside, held", "both held"}),
      boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
  BOOST_TEST(s.available() == 1u);
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_join_that_drops_a_std_style_lock_or_permit_gives_it_back, every_place) {
  coral::async_mutex m;
  coral::semaphore s(1);
  auto fails = []() -> coral::task<> {
    co_await coral::yield();
    throw std::runtime_error("failed");
  };
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<int> {
    int failures = 0;
    for (int i = 0; i < 20; ++i) {
      try {
        co_await coral::when_all(m.lock(), s.acquire(), fails());
      } catch (const std::runtime_error&) {
        ++failures;
      }
      try {
        co_await (m.lock() && fails());
      } catch (const std::runtime_error&) {
        ++failures;
      }
      try {
        co_await (s.acquire() && fails());
      } catch (const std::runtime_error&) {
        ++failures;
      }
      try {  // (a join inside a join: the inner one hands its lock to the outer one)
        co_await coral::when_all(coral::with_timeout(1s, m.lock()), fails());
      } catch (const std::runtime_error&) {
        ++failures;
      }
    }
    co_return failures;
  });
  BOOST_TEST(get_within(std::move(j)) == 80);
  BOOST_TEST(m.try_lock());
  BOOST_TEST(s.available() == 1u);
}

// A join inside a join (nested when_all / when_any, chained operators, a timeout around a join)
// keeps what its branches took until the outermost join hands it to the task, or gives it back.
CORAL_TEST_CASE_ON_EACH_PLACE(a_join_inside_a_join_gives_back_what_the_outer_join_drops, every_place) {
  coral::async_mutex m;
  coral::shared_mutex rw;
  coral::semaphore s(2);
  coral::event never;
  auto fails = []() -> coral::task<> {
    co_await coral::yield();
    throw std::runtime_error("failed");
  };
  auto one = []() -> coral::task<int> { co_return 1; };
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    int failures = 0;
    auto count_failure = [&](auto awaitable) -> coral::task<> {
      try {
        co_await std::move(awaitable);
      } catch (const std::runtime_error&) {
        ++failures;
      }
    };
    co_await count_failure(coral::when_all(coral::when_all(rw.lock_shared(), one()), fails()));
    co_await count_failure(coral::when_all(coral::when_any(rw.lock(), never.wait()), fails()));
    co_await count_failure((m.lock() || never.wait()) && fails());
    co_await count_failure((m.lock() && one()) && fails());
    co_await count_failure((s.acquire() && s.acquire()) && fails());
    co_await count_failure(coral::when_all(coral::when_all(s.acquire(), s.acquire()), fails()));
    co_await count_failure(coral::when_any(coral::when_all(m.lock(), fails()), never.wait()));
    co_await count_failure(coral::when_all(coral::with_timeout(1s, coral::when_all(m.lock(), one())), fails()));
    co_await count_failure(coral::when_all(coral::on(place.get_executor(), m.lock() && one()), fails()));
    co_await count_failure(coral::non_cancellable(s.acquire() && s.acquire()) && fails());
    seen.push_back(std::to_string(failures) + " failed");
    seen.push_back(m.try_lock() && rw.try_lock() && s.available() == 2 ? "all given back" : "one kept");
    m.unlock();
    rw.unlock();

    // Handed over, they are the task's.
    auto [locked, x] = co_await coral::when_all(coral::when_all(m.lock(), one()), one());
    static_assert(std::is_same_v<decltype(locked), std::tuple<std::monostate, int>>);
    seen.push_back(std::get<1>(locked) + x == 2 && !m.try_lock() ? "held" : "not held");
    m.unlock();
    const auto chained = co_await ((m.lock() && one()) && one());
    static_assert(std::is_same_v<decltype(chained), const std::tuple<int, int>>);
    seen.push_back(!m.try_lock() ? "held" : "not held");
    m.unlock();
    const auto timed = co_await coral::with_timeout(1s, coral::when_all(rw.lock(), s.acquire()));
    seen.push_back(std::get<1>(timed) == std::monostate{} && !rw.try_lock_shared() && s.available() == 1 ? "held"
                                                                                                         : "not held");
    rw.unlock();
    s.release();
    const auto raced = co_await coral::when_any(coral::when_all(m.lock(), one()), never.wait());
    seen.push_back(raced.index() == 0 && !m.try_lock() ? "held" : "not held");
    m.unlock();
    const auto ored = co_await ((m.lock() || never.wait()) || never.wait());
    seen.push_back(ored.index() == 0 && !m.try_lock() ? "held" : "not held");
    m.unlock();
    co_await ((m.lock() && s.acquire()) && rw.lock_shared());
    seen.push_back(!m.try_lock() && s.available() == 1 && !rw.try_lock() ? "held" : "not held");
    m.unlock();
    s.release();
    rw.unlock_shared();

    // A timeout around a join that could not lock: the join's other branch ends, nothing is held.
    co_await m.lock();
    try {
      co_await coral::with_timeout(5ms, coral::when_all(m.lock(), s.acquire()));
      seen.push_back("locked twice");
    } catch (const coral::timeout_error&) {
      seen.push_back(s.available() == 2 ? "timed out, nothing held" : "timed out, a permit kept");
    }
    m.unlock();
    co_return seen;
  });
  BOOST_TEST(
      get_within(std::move(j)) == (std::vector<std::string>{"10 failed", "all given back", "held", "held", "held",
                                                            "held", "held", "held", "timed out, nothing held"}),
      boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
  BOOST_TEST(rw.try_lock());
  BOOST_TEST(s.available() == 2u);
}

// The awaiting task is cancelled while a nested join holds a lock its branch took: it is given
// back.
CORAL_TEST_CASE_ON_EACH_PLACE(cancelling_a_task_whose_nested_join_holds_a_lock_gives_it_back, every_place) {
  coral::async_mutex m;
  coral::semaphore s(1);
  coral::event never;
  std::promise<void> started;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    // (Started after the branches that lock: the mutex and the permit are free, so they are taken
    // as those branches start.)
    auto wait_started = [&]() -> coral::task<> {
      started.set_value();
      co_await never.wait();
    };
    co_await coral::when_all(coral::when_any(s.acquire(), never.wait()), coral::when_all(m.lock(), wait_started()));
  });
  BOOST_REQUIRE(started.get_future().wait_for(patience) == std::future_status::ready);
  j.cancel();
  BOOST_CHECK_THROW(get_within(std::move(j)), boost::system::system_error);
  BOOST_TEST(m.try_lock());
  BOOST_TEST(s.available() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(async_mutex)

BOOST_AUTO_TEST_CASE(lock_waiters_get_the_lock_first_come_first_served) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  BOOST_REQUIRE(m.try_lock());
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) {
    coral::spawn(ctx, [&, i]() -> coral::task<> {
      auto guard = co_await m.scoped_lock();
      order.push_back(i);
      co_await coral::yield();  // holds the lock across a suspension
    });
  }
  ctx.poll();
  ctx.restart();
  BOOST_TEST(order.empty());
  m.unlock();
  ctx.run();
  BOOST_TEST(order == (std::vector<int>{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_CASE(try_lock_fails_while_the_lock_is_held_and_never_overtakes_a_waiter) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  BOOST_TEST(m.try_lock());
  BOOST_TEST(!m.try_lock());
  bool waiter_locked = false;
  coral::spawn(ctx, [&]() -> coral::task<> {
    auto guard = co_await m.scoped_lock();
    waiter_locked = true;
  });
  ctx.poll();
  ctx.restart();
  m.unlock();                 // handed to the waiter, which has not run yet
  BOOST_TEST(!m.try_lock());  // so the lock is not free
  ctx.run();
  BOOST_TEST(waiter_locked);
  BOOST_TEST(m.try_lock());  // the waiter's guard unlocked it
  m.unlock();
}

BOOST_AUTO_TEST_CASE(a_guard_unlocks_once_when_it_goes_and_a_moved_from_guard_owns_nothing) {
  asio::io_context ctx(1);
  coral::async_mutex a, b;
  coral::spawn(ctx, [&]() -> coral::task<> {
    auto guard = co_await a.scoped_lock();
    BOOST_TEST(guard.owns_lock());
    BOOST_TEST(guard.mutex() == &a);
    coral::async_mutex_lock moved(std::move(guard));
    BOOST_TEST(!guard.owns_lock());
    BOOST_TEST(!a.try_lock());
    auto other = co_await b.scoped_lock();
    other = std::move(moved);  // unlocks b, now owns a
    BOOST_TEST(b.try_lock());
    b.unlock();
    BOOST_TEST(!a.try_lock());
    other.unlock();
    BOOST_TEST(!other.owns_lock());
    BOOST_TEST(a.try_lock());  // unlocked exactly once: the moved-from guards did nothing
    co_return;
  });
  ctx.run();
  BOOST_TEST(!a.try_lock());  // still held by the task's last try_lock
  a.unlock();
  // Adopting a lock taken with try_lock(); assigning over a guard unlocks what it held.
  BOOST_REQUIRE(a.try_lock());
  coral::async_mutex_lock adopted(a, std::adopt_lock);
  BOOST_REQUIRE(b.try_lock());
  adopted = coral::async_mutex_lock(b, std::adopt_lock);
  BOOST_TEST(a.try_lock());
  BOOST_TEST(!b.try_lock());
}

BOOST_AUTO_TEST_CASE(a_cancelled_lock_fails_with_operation_aborted_and_the_lock_goes_to_the_next_waiter) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  BOOST_REQUIRE(m.try_lock());
  auto first = coral::spawn(ctx, [&]() -> coral::task<> { auto guard = co_await m.scoped_lock(); });
  bool second_locked = false;
  auto second = coral::spawn(ctx, [&]() -> coral::task<> {
    auto guard = co_await m.scoped_lock();
    second_locked = true;
  });
  ctx.poll();
  ctx.restart();
  first.cancel();
  ctx.poll();
  ctx.restart();
  BOOST_TEST(failure_of(first) == asio::error::operation_aborted);
  m.unlock();
  ctx.run();
  BOOST_TEST(second_locked);
  BOOST_TEST(m.try_lock());  // the cancelled waiter holds nothing
}

BOOST_AUTO_TEST_CASE(the_mutex_excludes_under_contention_on_a_two_thread_pool_with_and_without_strands) {
  asio::thread_pool pool(2);
  check_mutual_exclusion([&](int) { return asio::any_io_executor(pool.get_executor()); }, 4, 2000);
  check_mutual_exclusion([&](int) { return asio::any_io_executor(asio::make_strand(pool)); }, 4, 2000);
}

BOOST_AUTO_TEST_CASE(the_mutex_excludes_under_contention_on_an_io_context_run_by_two_threads) {
  running_io_context ctx(2);
  check_mutual_exclusion([&](int) { return asio::any_io_executor(ctx.get_executor()); }, 4, 2000);
}

BOOST_AUTO_TEST_CASE(the_mutex_excludes_under_contention_across_the_default_executors) {
  check_mutual_exclusion(
      [](int t) {
        switch (t % 3) {
          case 0:
            return asio::any_io_executor(coral::loop_executor{});
          case 1:
            return asio::any_io_executor(coral::pool_executor{});
          default:
            return asio::any_io_executor(coral::new_thread_executor{});
        }
      },
      6, 300);
}

// The same race for the mutex: unlock() hands the lock to waiters being cancelled. Afterwards the
// lock must be free (not lost to a cancelled waiter) and no two tasks ever held it at once.
BOOST_AUTO_TEST_CASE(a_lock_handed_to_a_waiter_cancelled_at_that_moment_goes_to_the_next_waiter_or_stays_free) {
  asio::thread_pool pool(2);
  constexpr int iterations = 1500, waiters = 4;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  int lost = 0, locked_total = 0;
  for (int it = 0; it < iterations; ++it) {
    coral::async_mutex m;
    BOOST_REQUIRE(m.try_lock());
    std::vector<coral::job<>> jobs;
    for (int i = 0; i < waiters; ++i) {
      jobs.push_back(coral::spawn(asio::make_strand(pool), [&]() -> coral::task<> {
        auto guard = co_await m.scoped_lock();
        if (inside.fetch_add(1) != 0) overlapped = true;
        inside.fetch_sub(1);
      }));
    }
    std::promise<void> unlock_done;
    asio::post(pool, [&] {
      m.unlock();
      unlock_done.set_value();
    });
    for (auto& j : jobs) j.cancel();
    for (auto& j : jobs) {
      auto e = failure_of(j);
      BOOST_REQUIRE(!e || e == asio::error::operation_aborted);
      if (!e) ++locked_total;
    }
    unlock_done.get_future().wait();
    if (!m.try_lock()) {
      ++lost;
    } else {
      m.unlock();
    }
  }
  BOOST_TEST(lost == 0);
  BOOST_TEST(!overlapped);
  BOOST_TEST(locked_total > 0);
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_lock_handed_over_while_its_race_is_decided_goes_to_exactly_one_place, every_place) {
  // The holder unlocks at random moments around the deadline of a waiter's with_timeout(m.lock()),
  // from another task: the waiter either holds the lock (and knows it) or the lock stays free.
  coral::async_mutex m;
  std::mt19937 random(7);
  int won = 0, lost = 0;
  for (int round = 0; round < 200; ++round) {
    BOOST_REQUIRE(m.try_lock());
    auto held = std::make_shared<coral::async_mutex_lock>(m, std::adopt_lock);
    const auto deadline = std::chrono::microseconds(random() % 300);
    const auto release_at = std::chrono::microseconds(random() % 300);
    auto waiter = coral::spawn(place.get_executor(), [&m, deadline]() -> coral::task<bool> {
      try {
        auto guard = co_await coral::with_timeout(deadline, m.scoped_lock());
        co_return guard.owns_lock();
      } catch (const coral::timeout_error&) {
        co_return false;
      }
    });
    auto releaser = coral::spawn(place.get_executor(), [held, release_at]() mutable -> coral::task<> {
      co_await coral::sleep_for(release_at);
      held->unlock();
    });
    held.reset();
    const bool got = get_within(std::move(waiter));
    get_within(std::move(releaser));
    (got ? won : lost)++;
    BOOST_TEST_REQUIRE(m.try_lock(), "round " << round << ": the lock is held by nobody who knows it");
    m.unlock();
  }
  BOOST_TEST(won + lost == 200);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(semaphore)

BOOST_AUTO_TEST_CASE(acquirers_get_permits_first_come_first_served_and_release_n_wakes_n) {
  asio::io_context ctx(1);
  coral::semaphore s(0);
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) {
    coral::spawn(ctx, [&, i]() -> coral::task<> {
      co_await s.acquire();
      order.push_back(i);
    });
  }
  ctx.poll();
  ctx.restart();
  s.release(2);
  ctx.poll();
  ctx.restart();
  BOOST_TEST(order == (std::vector<int>{0, 1}), boost::test_tools::per_element());
  s.release(3);
  ctx.run();
  BOOST_TEST(order == (std::vector<int>{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(s.available() == 1u);  // what no waiter took
}

BOOST_AUTO_TEST_CASE(try_acquire_takes_only_available_permits_and_never_overtakes_a_waiter) {
  asio::io_context ctx(1);
  coral::semaphore s(2);
  BOOST_TEST(s.try_acquire());
  BOOST_TEST(s.try_acquire());
  BOOST_TEST(!s.try_acquire());
  bool acquired = false;
  coral::spawn(ctx, [&]() -> coral::task<> {
    co_await s.acquire();
    acquired = true;
  });
  ctx.poll();
  ctx.restart();
  s.release();
  BOOST_TEST(!s.try_acquire());  // the permit went to the waiter
  ctx.run();
  BOOST_TEST(acquired);
  BOOST_TEST(s.available() == 0u);
}

BOOST_AUTO_TEST_CASE(a_cancelled_acquire_fails_with_operation_aborted_and_takes_no_permit) {
  asio::io_context ctx(1);
  coral::semaphore s(0);
  auto waiter = coral::spawn(ctx, [&]() -> coral::task<> { co_await s.acquire(); });
  ctx.poll();
  ctx.restart();
  waiter.cancel();
  ctx.run();
  BOOST_TEST(failure_of(waiter) == asio::error::operation_aborted);
  s.release();
  BOOST_TEST(s.available() == 1u);  // not handed to the cancelled waiter
}

// The race the rule is about: release() hands permits to waiters that are being cancelled at
// that same moment, from another thread. Each waiter either holds one permit (it succeeded) or
// none (it failed with operation_aborted): succeeded + still available == released, always.
BOOST_AUTO_TEST_CASE(a_permit_handed_to_a_waiter_cancelled_at_that_moment_is_neither_lost_nor_duplicated) {
  asio::thread_pool pool(2);
  constexpr int iterations = 1500, waiters = 4, released = 2;
  int handed_then_cancelled_lost = 0, succeeded_total = 0, aborted_total = 0;
  for (int it = 0; it < iterations; ++it) {
    coral::semaphore s(0);
    std::vector<coral::job<>> jobs;
    for (int i = 0; i < waiters; ++i) {
      jobs.push_back(coral::spawn(asio::make_strand(pool), [&s]() -> coral::task<> { co_await s.acquire(); }));
    }
    std::promise<void> release_done;
    asio::post(pool, [&] {
      s.release(released);
      release_done.set_value();
    });
    for (auto& j : jobs) j.cancel();
    int succeeded = 0;
    for (auto& j : jobs) {
      auto e = failure_of(j);
      BOOST_REQUIRE(!e || e == asio::error::operation_aborted);
      (e ? aborted_total : succeeded)++;
    }
    release_done.get_future().wait();  // if every waiter was cancelled first, it may still run
    if (succeeded + static_cast<int>(s.available()) != released) ++handed_then_cancelled_lost;
    succeeded_total += succeeded;
  }
  BOOST_TEST(handed_then_cancelled_lost == 0);
  BOOST_TEST_MESSAGE("succeeded " << succeeded_total << ", aborted " << aborted_total);
  BOOST_TEST(succeeded_total > 0);
  BOOST_TEST(aborted_total > 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(event)

BOOST_AUTO_TEST_CASE(set_wakes_every_waiter_in_order_and_the_event_stays_set_until_reset) {
  asio::io_context ctx(1);
  coral::event e;
  std::vector<int> order;
  auto waiter = [&](int i) -> coral::task<> {
    co_await e.wait();
    order.push_back(i);
  };
  for (int i = 0; i < 3; ++i) coral::spawn(ctx, waiter(i));
  ctx.poll();
  ctx.restart();
  BOOST_TEST(!e.is_set());
  BOOST_TEST(order.empty());
  e.set();
  BOOST_TEST(e.is_set());
  ctx.poll();
  ctx.restart();
  BOOST_TEST(order == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
  coral::spawn(ctx, waiter(3));  // set: completes at once
  ctx.poll();
  ctx.restart();
  BOOST_TEST(order.size() == 4u);
  e.reset();
  BOOST_TEST(!e.is_set());
  coral::spawn(ctx, waiter(4));  // reset: waits for the next set()
  ctx.poll();
  ctx.restart();
  BOOST_TEST(order.size() == 4u);
  e.set();
  ctx.run();
  BOOST_TEST(order.size() == 5u);
}

BOOST_AUTO_TEST_CASE(a_cancelled_event_wait_fails_with_operation_aborted_and_a_later_set_is_harmless) {
  asio::io_context ctx(1);
  coral::event e;
  auto waiter = coral::spawn(ctx, [&]() -> coral::task<> { co_await e.wait(); });
  ctx.poll();
  ctx.restart();
  waiter.cancel();
  ctx.run();
  BOOST_TEST(failure_of(waiter) == asio::error::operation_aborted);
  e.set();
  BOOST_TEST(e.is_set());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(every_sync_primitive)

// Every source of cancellation reaches each primitive's wait: job.cancel(), the slot of spawn's
// completion token, and a parent's cancellation reaching a child on another executor.
BOOST_AUTO_TEST_CASE(every_cancellation_source_aborts_a_wait_on_each_primitive) {
  for (std::string source : {"job", "token slot", "parent"}) {
    BOOST_TEST_CONTEXT(source) {
      asio::io_context ctx(1);
      coral::event_loop other;
      waiting_on_each w;
      asio::cancellation_signal signals[3];
      std::string token_outcomes[3];
      std::vector<coral::job<std::string>> jobs;
      for (int i = 0; i < 3; ++i) {
        if (source == "job") {
          jobs.push_back(coral::spawn(ctx, wait_on(w, i)));
        } else if (source == "token slot") {
          coral::spawn(ctx, wait_on(w, i),
                       asio::bind_cancellation_slot(signals[i].slot(), [&, i](std::exception_ptr e, std::string r) {
                         token_outcomes[i] = e ? "exception" : r;
                       }));
        } else {
          jobs.push_back(coral::spawn(ctx, [&, i]() -> coral::task<std::string> {
            co_return co_await coral::on(other.get_executor(), wait_on(w, i));
          }));
        }
      }
      ctx.poll();
      ctx.restart();
      thread_of(other.get_executor());  // the children have reached their waits on the other loop
      thread_of(other.get_executor());
      if (source == "token slot") {
        for (auto& s : signals) s.emit(asio::cancellation_type::all);
        ctx.run();
        for (auto& o : token_outcomes) BOOST_TEST(o == "aborted");
      } else {
        for (auto& j : jobs) j.cancel();
        std::thread runner([&] { ctx.run(); });
        for (auto& j : jobs) BOOST_TEST(get_within(j) == "aborted");
        runner.join();
      }
      // Nothing was acquired by the cancelled waits.
      w.mutex.unlock();
      BOOST_TEST(w.mutex.try_lock());
      w.permits.release();
      BOOST_TEST(w.permits.available() == 1u);
    }
  }
}

// Level-triggered: once the task is cancelled, a wait it starts afterwards fails at once, even
// when it could complete without waiting, and takes nothing.
BOOST_AUTO_TEST_CASE(a_wait_started_after_the_task_was_cancelled_fails_at_once_and_takes_nothing) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  coral::semaphore s(1);
  coral::event never, set;
  set.set();
  auto job = coral::spawn(ctx, [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> out;
    // Each await's outcome: "ok" or "aborted".
    for (int step = 0; step < 4; ++step) {
      try {
        if (step == 0) co_await never.wait();                  // cancelled while waiting here
        if (step == 1) auto guard = co_await m.scoped_lock();  // free
        if (step == 2) co_await s.acquire();                   // a permit is available
        if (step == 3) co_await set.wait();                    // set
        out.push_back("ok");
      } catch (const boost::system::system_error& e) {
        out.push_back(outcome_of(e));
      }
    }
    co_return out;
  });
  ctx.poll();
  ctx.restart();
  job.cancel();
  ctx.run();
  BOOST_TEST(get_within(job) == (std::vector<std::string>{"aborted", "aborted", "aborted", "aborted"}),
             boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
  BOOST_TEST(s.available() == 1u);
}

BOOST_AUTO_TEST_CASE(waiters_resume_on_their_own_executors_whoever_wakes_them) {
  waiting_on_each w;
  std::vector<coral::job<bool>> jobs;
  // Waiting on the loop (single-threaded: the post runs once the task has suspended), and on the
  // pool.
  std::promise<void> suspended[3];
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(coral::spawn(coral::loop_executor{}, [&, i]() -> coral::task<bool> {
      asio::post(coral::loop_executor{}, [&, i] { suspended[i].set_value(); });
      if (i == 0) auto guard = co_await w.mutex.scoped_lock();
      if (i == 1) co_await w.permits.acquire();
      if (i == 2) co_await w.flag.wait();
      co_return coral::loop_executor{}.running_in_this_thread();
    }));
  }
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(coral::spawn(coral::pool_executor{}, [&, i]() -> coral::task<bool> {
      if (i == 0) auto guard = co_await w.mutex.scoped_lock();
      if (i == 1) co_await w.permits.acquire();
      if (i == 2) co_await w.flag.wait();
      co_return coral::pool_executor{}.running_in_this_thread();
    }));
  }
  for (auto& s : suspended) s.get_future().wait();
  // Woken from a thread of neither executor.
  std::thread waker([&] {
    w.mutex.unlock();
    w.permits.release(2);
    w.flag.set();
  });
  for (auto& j : jobs) BOOST_TEST(get_within(j));
  waker.join();
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_tasks_waiting_on_each_primitive_and_later_wakes_are_harmless,
                              Context, owned_contexts) {
  waiting_on_each w;
  std::vector<coral::job<std::string>> jobs;
  {
    Context ctx;
    jobs = w.spawn_waiters(ctx.get_executor());
    ctx.settle();
    BOOST_TEST(lifetime::alive == 3);
  }
  BOOST_TEST(lifetime::alive == 0);
  w.mutex.unlock();
  w.permits.release();
  w.flag.set();
  for (auto& j : jobs) BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(w.mutex.try_lock());  // nothing was handed to the dead waiters
  BOOST_TEST(w.permits.available() == 1u);
}

// unlock() / release() hand the lock and a permit to waiters whose resumption is queued on a
// context that is then destroyed: the waiters never resume, and what they were handed goes back.
BOOST_AUTO_TEST_CASE(a_lock_or_permit_handed_to_a_task_destroyed_before_it_resumes_is_handed_on) {
  waiting_on_each w;
  std::vector<coral::job<std::string>> jobs;
  {
    asio::io_context ctx(1);
    jobs = w.spawn_waiters(ctx.get_executor());
    ctx.poll();
    w.mutex.unlock();  // the resumptions are posted to ctx, which never runs them
    w.permits.release();
    w.flag.set();
  }
  BOOST_TEST(lifetime::alive == 0);
  for (auto& j : jobs) BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(w.mutex.try_lock());
  BOOST_TEST(w.permits.available() == 1u);
}

BOOST_AUTO_TEST_CASE(destroying_a_primitive_fails_its_waiters_with_operation_aborted) {
  asio::io_context ctx(1);
  auto w = std::make_unique<waiting_on_each>();
  auto jobs = w->spawn_waiters(ctx.get_executor());
  ctx.poll();
  ctx.restart();
  w->mutex.unlock();  // the lock goes to its waiter; the other two still wait
  ctx.poll();
  ctx.restart();
  w.reset();
  ctx.run();
  BOOST_TEST(jobs[0].get_result() == "ok");
  BOOST_TEST(jobs[1].get_result() == "aborted");
  BOOST_TEST(jobs[2].get_result() == "aborted");
}

// The chat-room pattern across contexts: tasks hold I/O objects of their own context and wait on
// primitives that a task on another context keeps waking. Destroying their context at a random
// moment frees them on the thread destroying it, while it still exists: never on the waker's
// thread afterwards, where their socket's and timer's destructors would touch a dead reactor.
BOOST_AUTO_TEST_CASE(destroying_a_context_whose_tasks_another_context_keeps_waking_frees_them_there) {
  coral::event_loop waker_loop;
  std::mt19937 random(7);
  for (int round = 0; round < 150; ++round) {
    auto permits = std::make_shared<coral::semaphore>(0);
    auto flag = std::make_shared<coral::event>();
    auto stop = std::make_shared<std::atomic<bool>>(false);
    auto waker = coral::spawn(waker_loop.get_executor(), [permits, flag, stop]() -> coral::task<> {
      while (!stop->load()) {
        permits->release();
        flag->set();
        flag->reset();
        co_await coral::yield();
      }
    });
    {
      asio::io_context ctx(1);
      for (int i = 0; i < 4; ++i) {
        coral::spawn(ctx, [&ctx, permits, flag, i]() -> coral::task<> {
          io_objects_of own(ctx);
          for (;;) {
            if (i % 2) {
              co_await permits->acquire();
            } else {
              co_await flag->wait();
            }
          }
        });
      }
      ctx.run_for(std::chrono::microseconds(random() % 2000));
    }  // destroyed while the waker goes on
    stop->store(true);
    BOOST_TEST_REQUIRE(waker.wait_for(patience));
    BOOST_TEST_REQUIRE(lifetime::alive == 0);
  }
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_raced_lock_acquire_or_wait_that_loses_takes_nothing_and_one_that_wins_yields_its_guard,
                              every_place) {
  coral::async_mutex m;
  coral::semaphore permits(1);
  coral::event ev;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    auto held = co_await m.scoped_lock();
    try {
      auto twice = co_await coral::with_timeout(5ms, m.scoped_lock());
      seen.push_back(twice.owns_lock() ? "locked twice" : "an empty guard");
    } catch (const coral::timeout_error&) {
      seen.push_back("timeout");
    }
    held.unlock();
    seen.push_back(m.try_lock() ? "free" : "held by the loser");
    m.unlock();
    auto guard = co_await coral::with_timeout(10s, m.scoped_lock());
    seen.push_back(guard.owns_lock() && !m.try_lock() ? "guard" : "no guard");
    guard.unlock();

    auto permit = co_await permits.scoped_acquire();
    const auto acquire_or_sleep = co_await (permits.scoped_acquire() || 5ms);
    seen.push_back(acquire_or_sleep.index() == 1 ? "slept" : "acquired");
    permit.give_back();
    seen.push_back(std::to_string(permits.available()));
    {
      const auto raced = co_await coral::when_any(permits.scoped_acquire(), ev.wait());
      seen.push_back(raced.index() == 0 && permits.available() == 0 ? "permit" : "no permit");
    }  // (the permit goes back with the variant)
    seen.push_back(std::to_string(permits.available()));

    const auto waited = co_await coral::when_any(ev.wait(), 5ms);
    seen.push_back(waited.index() == 1 ? "slept" : "set");
    ev.set();
    auto both = co_await coral::when_all(m.scoped_lock(), ev.wait());
    seen.push_back(std::get<0>(both).owns_lock() ? "both" : "not both");
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) ==
                 (std::vector<std::string>{"timeout", "free", "guard", "slept", "1", "permit", "1", "slept", "both"}),
             boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
  BOOST_TEST(permits.available() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(latch)

CORAL_TEST_CASE_ON_EACH_PLACE(the_last_arrival_wakes_every_waiter_and_none_goes_on_before_it, every_place) {
  constexpr int tasks = 6;
  coral::latch all_arrived(tasks);
  std::atomic<int> arrived{0}, early{0};
  std::vector<coral::job<>> jobs;
  for (int t = 0; t < tasks; ++t) {
    jobs.push_back(coral::spawn(place.get_executor(), [&]() -> coral::task<> {
      ++arrived;
      co_await all_arrived.arrive_and_wait();
      if (arrived.load() != tasks) ++early;
      co_await all_arrived.wait();  // at zero: completes at once
    }));
  }
  for (auto& j : jobs) get_within(j);
  BOOST_TEST(early.load() == 0);
  BOOST_TEST(all_arrived.try_wait());
  BOOST_CHECK_THROW(all_arrived.count_down(), std::logic_error);  // below zero: nothing changes
  BOOST_TEST(all_arrived.try_wait());
}

BOOST_AUTO_TEST_CASE(waiters_are_woken_in_order_on_their_own_executor_never_inside_count_down) {
  asio::io_context ctx(1);
  coral::latch l(2);
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    coral::spawn(ctx, [&, i]() -> coral::task<> {
      co_await l.wait();
      order.push_back(i);
    });
  }
  ctx.poll();
  BOOST_CHECK_THROW(l.count_down(3), std::logic_error);
  l.count_down();
  BOOST_TEST(!l.try_wait());
  ctx.poll();
  BOOST_TEST(order.empty());
  l.count_down();
  BOOST_TEST(order.empty());  // posted, not resumed inside count_down()
  ctx.run();
  BOOST_TEST(order == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
}

CORAL_TEST_CASE_ON_EACH_PLACE(a_latch_wait_is_cancellable_raceable_and_timed, every_place) {
  coral::latch never(1);
  coral::latch open(0);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    try {
      co_await coral::with_timeout(2ms, never.wait());
    } catch (const coral::timeout_error&) {
      seen.push_back("timeout");
    }
    auto r = co_await coral::when_any(never.wait(), open.wait());
    seen.push_back(r.index() == 1 ? "open won" : "never won");
    auto o = co_await (never.wait() || 1ms);
    seen.push_back(o.index() == 1 ? "slept" : "woke");
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<std::string>{"timeout", "open won", "slept"}),
             boost::test_tools::per_element());
  auto started = std::make_shared<std::promise<void>>();
  auto waiting = coral::spawn(place.get_executor(), [&never, started]() -> coral::task<> {
    started->set_value();
    co_await never.wait();
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  waiting.cancel();
  BOOST_TEST((failure_of(std::move(waiting)) == asio::error::operation_aborted));
  never.count_down();  // nobody left waiting: harmless
  BOOST_TEST(never.try_wait());
}

BOOST_AUTO_TEST_CASE(destroying_a_context_frees_its_waiting_tasks_and_a_later_count_down_is_harmless) {
  coral::latch l(1);
  std::atomic<int> alive{0};
  struct counted {
    std::atomic<int>& n;
    explicit counted(std::atomic<int>& c) : n(c) { ++n; }
    ~counted() { --n; }
  };
  {
    asio::io_context ctx(1);
    for (int i = 0; i < 3; ++i) {
      coral::spawn(ctx, [&l, &alive]() -> coral::task<> {
        counted c(alive);
        co_await l.wait();
      });
    }
    ctx.poll();
    BOOST_TEST(alive == 3);
  }
  BOOST_TEST(alive == 0);
  l.count_down();
  BOOST_TEST(l.try_wait());
}

BOOST_AUTO_TEST_CASE(destroying_a_latch_fails_its_waiters_with_operation_aborted) {
  asio::io_context ctx(1);
  auto l = std::make_unique<coral::latch>(1);
  auto j = coral::spawn(ctx, [&]() -> coral::task<> { co_await l->wait(); });
  ctx.poll();
  l.reset();
  ctx.run();
  BOOST_TEST((failure_of(std::move(j)) == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(barrier)

// As std::barrier users check it: tasks on every executor kind go through many phases; the
// completion sees every participant arrived for its phase and none ahead, and a task resumes from
// phase p only after the completion of p ran.
CORAL_TEST_CASE_ON_EACH_PLACE(every_phase_completes_once_after_all_arrived_and_before_any_waiter_goes_on, every_place) {
  constexpr int tasks = 5, phases = 40;
  std::atomic<int> arrivals{0}, completions{0}, wrong_at_completion{0}, wrong_after_wait{0};
  coral::barrier sync(tasks, [&]() noexcept {
    if (arrivals.load() != tasks * (completions.load() + 1)) ++wrong_at_completion;
    ++completions;
  });
  std::vector<coral::job<>> jobs;
  for (int t = 0; t < tasks; ++t) {
    jobs.push_back(coral::spawn(place.get_executor(), [&, t]() -> coral::task<> {
      std::minstd_rand random(static_cast<unsigned>(t));
      for (int p = 0; p < phases; ++p) {
        for (int y = static_cast<int>(random() % 3); y > 0; --y) co_await coral::yield();
        ++arrivals;
        co_await sync.arrive_and_wait();
        if (completions.load() != p + 1) ++wrong_after_wait;
      }
    }));
  }
  for (auto& j : jobs) get_within(j);
  BOOST_TEST(wrong_at_completion.load() == 0);
  BOOST_TEST(wrong_after_wait.load() == 0);
  BOOST_TEST(completions.load() == phases);
  BOOST_TEST(sync.completed_phases() == static_cast<std::uint64_t>(phases));
}

BOOST_AUTO_TEST_CASE(waiters_are_woken_in_order_after_the_completion_never_inside_the_arrival_that_completes) {
  asio::io_context ctx(1);
  std::vector<std::string> order;
  const auto caller = std::this_thread::get_id();
  bool completion_on_caller = false;
  coral::barrier sync(4, [&]() noexcept {
    order.push_back("completion");
    completion_on_caller = std::this_thread::get_id() == caller;
  });
  for (int i = 0; i < 3; ++i) {
    coral::spawn(ctx, [&, i]() -> coral::task<> {
      co_await sync.arrive_and_wait();
      order.push_back(std::to_string(i));
    });
  }
  ctx.poll();
  BOOST_TEST(order.empty());
  sync.arrive_and_drop();  // the fourth arrival, from plain code: the completion runs here
  BOOST_TEST(order == std::vector<std::string>{"completion"}, boost::test_tools::per_element());
  BOOST_TEST(completion_on_caller);
  ctx.restart();
  ctx.run();
  BOOST_TEST(order == (std::vector<std::string>{"completion", "0", "1", "2"}), boost::test_tools::per_element());
  // From now on three participants.
  order.clear();
  for (int i = 0; i < 3; ++i) {
    coral::spawn(ctx, [&, i]() -> coral::task<> {
      co_await sync.arrive_and_wait();
      order.push_back(std::to_string(i));
    });
  }
  ctx.restart();
  ctx.run();
  // The last to arrive runs the completion and goes on at once; the others were posted.
  BOOST_TEST(order == (std::vector<std::string>{"completion", "2", "0", "1"}), boost::test_tools::per_element());
  BOOST_TEST(sync.completed_phases() == 2u);
}

BOOST_AUTO_TEST_CASE(more_arrivals_than_participants_throw_and_change_nothing) {
  coral::barrier sync(1);
  sync.arrive_and_drop();  // completes phase 0; no participant left
  BOOST_TEST(sync.completed_phases() == 1u);
  BOOST_CHECK_THROW(sync.arrive_and_drop(), std::logic_error);
  asio::io_context ctx(1);
  auto j = coral::spawn(ctx, [&]() -> coral::task<> { co_await sync.arrive_and_wait(); });
  ctx.run();
  BOOST_CHECK_THROW(get_within(std::move(j)), std::logic_error);
  BOOST_TEST(sync.completed_phases() == 1u);
}

// A failed wait did not arrive: the phase still waits for that participant.
CORAL_TEST_CASE_ON_EACH_PLACE(a_cancelled_raced_or_timed_out_wait_withdraws_its_arrival, every_place) {
  std::atomic<int> completions{0};
  coral::barrier sync(2, [&]() noexcept { ++completions; });
  coral::event never;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    try {
      co_await coral::with_timeout(2ms, sync.arrive_and_wait());
    } catch (const coral::timeout_error&) {
      seen.push_back("timeout");
    }
    auto r = co_await (sync.arrive_and_wait() || 1ms);
    seen.push_back(r.index() == 1 ? "slept" : "arrived");
    auto s = co_await coral::when_any(never.wait(), sync.arrive_and_wait(), 1ms);
    seen.push_back(s.index() == 2 ? "slept" : "woke");
    seen.push_back(std::to_string(sync.completed_phases()));
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<std::string>{"timeout", "slept", "slept", "0"}),
             boost::test_tools::per_element());
  auto started = std::make_shared<std::promise<void>>();
  auto waiting = coral::spawn(place.get_executor(), [&sync, started]() -> coral::task<> {
    started->set_value();
    co_await sync.arrive_and_wait();
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  waiting.cancel();
  BOOST_TEST((failure_of(std::move(waiting)) == asio::error::operation_aborted));
  sync.arrive_and_drop();  // one arrival of two: the withdrawn ones do not count
  BOOST_TEST(sync.completed_phases() == 0u);
  BOOST_TEST(completions.load() == 0);
  // A raced wait whose phase completes wins its race.
  auto winner = coral::spawn(place.get_executor(), [&]() -> coral::task<std::size_t> {
    auto r = co_await coral::when_any(sync.arrive_and_wait(), never.wait());
    co_return r.index();
  });
  BOOST_TEST(get_within(std::move(winner)) == 0u);
  BOOST_TEST(completions.load() == 1);
}

// Two participants, one of which waits with a short random time limit and arrives again after
// each timeout: its timed-out waits never count, its successful ones always do, so both see the
// same phases, on every executor kind.
CORAL_TEST_CASE_ON_EACH_PLACE(a_timed_out_wait_never_counts_and_a_successful_one_always_does, places) {
  constexpr int phases = 200;
  std::atomic<int> completions{0}, patient_wrong{0}, hasty_wrong{0}, timeouts{0};
  coral::barrier sync(2, [&]() noexcept { ++completions; });
  auto patient = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    std::minstd_rand random(3);
    for (int p = 0; p < phases; ++p) {
      co_await coral::sleep_for(std::chrono::microseconds(random() % 100));  // arrives at any moment
      co_await sync.arrive_and_wait();
      if (completions.load() != p + 1) ++patient_wrong;
    }
  });
  auto hasty = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    std::minstd_rand random(7);
    for (int p = 0; p < phases; ++p) {
      for (;;) {
        try {
          co_await coral::with_timeout(std::chrono::microseconds(random() % 200), sync.arrive_and_wait());
          break;
        } catch (const coral::timeout_error&) {
          ++timeouts;
        }
      }
      if (completions.load() != p + 1) ++hasty_wrong;
    }
  });
  get_within(patient);
  get_within(hasty);
  BOOST_TEST(patient_wrong.load() == 0);
  BOOST_TEST(hasty_wrong.load() == 0);
  BOOST_TEST(completions.load() == phases);
  BOOST_TEST_MESSAGE("timeouts: " << timeouts.load());
}

BOOST_AUTO_TEST_CASE(destroying_a_context_frees_its_waiting_tasks_and_withdraws_their_arrivals) {
  coral::barrier sync(3);
  {
    asio::io_context ctx(1);
    for (int i = 0; i < 2; ++i) {
      coral::spawn(ctx, [&sync]() -> coral::task<> {
        lifetime alive;
        co_await sync.arrive_and_wait();
      });
    }
    ctx.poll();
    BOOST_TEST(lifetime::alive == 2);
  }
  BOOST_TEST(lifetime::alive == 0);
  sync.arrive_and_drop();
  sync.arrive_and_drop();
  BOOST_TEST(sync.completed_phases() == 0u);
  sync.arrive_and_drop();
  BOOST_TEST(sync.completed_phases() == 1u);
}

BOOST_AUTO_TEST_CASE(destroying_a_barrier_fails_its_waiters_with_operation_aborted) {
  asio::io_context ctx(1);
  auto sync = std::make_unique<coral::barrier<>>(2);
  auto j = coral::spawn(ctx, [&]() -> coral::task<> { co_await sync->arrive_and_wait(); });
  ctx.poll();
  sync.reset();
  ctx.restart();
  ctx.run();
  BOOST_TEST((failure_of(std::move(j)) == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch)

BOOST_AUTO_TEST_CASE(a_receiver_waits_for_a_value_newer_than_it_read_and_is_woken_in_order_never_inside_send) {
  asio::io_context ctx(1);
  coral::watch<std::string> w("a");
  std::vector<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    coral::spawn(ctx, [&, i, r = w.subscribe()]() mutable -> coral::task<> {
      BOOST_TEST(!r.has_changed());  // subscribed at "a"
      BOOST_TEST(r.get() == "a");
      co_await r.changed();
      seen.push_back(std::to_string(i) + r.get());
    });
  }
  ctx.poll();
  BOOST_TEST(seen.empty());
  w.send("b");
  w.send("c");               // the latest wins: "b" is skipped
  BOOST_TEST(seen.empty());  // posted, not resumed inside send()
  ctx.restart();
  ctx.run();
  BOOST_TEST(seen == (std::vector<std::string>{"0c", "1c"}), boost::test_tools::per_element());
  // changed() marks what it saw read; a newer value completes it at once.
  auto r = w.subscribe();
  w.send("d");
  BOOST_TEST(r.has_changed());
  auto j = coral::spawn(ctx, [&]() -> coral::task<std::string> {
    co_await r.changed();  // "d" is newer: at once
    auto second = co_await (r.changed() || 1ms);
    co_return *r.borrow() + (second.index() == 1 ? " then nothing newer" : " then newer");
  });
  ctx.restart();
  ctx.run();
  BOOST_TEST(get_within(std::move(j)) == "d then nothing newer");
  BOOST_TEST(w.get() == "d");
}

BOOST_AUTO_TEST_CASE(close_fails_a_waiting_changed_but_an_unread_value_is_still_seen_first) {
  asio::io_context ctx(1);
  coral::watch<int> w(0);
  auto waiting = coral::spawn(ctx, [r = w.subscribe()]() mutable -> coral::task<> { co_await r.changed(); });
  auto unread = w.subscribe();
  ctx.poll();
  w.send(1);
  ctx.restart();
  ctx.run();
  BOOST_TEST(failure_of(std::move(waiting)).value() == 0);
  auto closed = coral::spawn(ctx, [r = w.subscribe()]() mutable -> coral::task<> { co_await r.changed(); });
  ctx.restart();
  ctx.poll();
  w.send(2);
  w.close();
  w.close();  // only the first does anything
  BOOST_TEST(w.closed());
  ctx.restart();
  ctx.run();
  BOOST_TEST(failure_of(std::move(closed)).value() == 0);  // it was woken by send(2) before close()
  BOOST_CHECK_THROW(w.send(3), coral::channel_closed);
  auto j = coral::spawn(ctx, [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    co_await unread.changed();  // 2 is unread: it completes, closed or not
    seen.push_back(std::to_string(unread.get()));
    try {
      co_await unread.changed();
    } catch (const coral::channel_closed& e) {
      seen.push_back(e.code() == coral::errc::channel_closed ? "closed" : "?");
    }
    co_return seen;
  });
  ctx.restart();
  ctx.run();
  BOOST_TEST(get_within(std::move(j)) == (std::vector<std::string>{"2", "closed"}), boost::test_tools::per_element());
  BOOST_TEST(w.get() == 2);
}

BOOST_AUTO_TEST_CASE(destroying_a_watch_closes_it_for_its_receivers) {
  asio::io_context ctx(1);
  auto w = std::make_unique<coral::watch<int>>(7);
  auto r = w->subscribe();
  auto j = coral::spawn(ctx, [&]() -> coral::task<> { co_await r.changed(); });
  ctx.poll();
  w.reset();
  ctx.restart();
  ctx.run();
  BOOST_CHECK_THROW(get_within(std::move(j)), coral::channel_closed);
  BOOST_TEST(r.get() == 7);
}

CORAL_TEST_CASE_ON_EACH_PLACE(changed_is_cancellable_raceable_and_timed_and_a_failed_one_marks_nothing_read,
                              every_place) {
  coral::watch<int> w(0);
  coral::channel<int> ch(1);
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    auto r = w.subscribe();
    try {
      co_await coral::with_timeout(2ms, r.changed());
    } catch (const coral::timeout_error&) {
      seen.push_back("timeout");
    }
    auto o = co_await (r.changed() || 1ms);
    seen.push_back(o.index() == 1 ? "slept" : "changed");
    w.send(1);
    co_await ch.send(5);
    // A select: both can happen at once; whichever it took, the other took nothing.
    auto s = co_await coral::when_any(r.changed(), ch.receive());
    if (s.index() == 0) {
      seen.push_back(r.has_changed() ? "?" : "changed");
      seen.push_back(std::to_string(co_await ch.receive()));
    } else {
      seen.push_back(r.has_changed() ? "changed" : "?");
      seen.push_back(std::to_string(std::get<1>(s)));
    }
    seen.push_back(std::to_string(r.get()));
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<std::string>{"timeout", "slept", "changed", "5", "1"}),
             boost::test_tools::per_element());
  auto started = std::make_shared<std::promise<void>>();
  auto r = w.subscribe();
  auto waiting = coral::spawn(place.get_executor(), [&r, started]() -> coral::task<> {
    started->set_value();
    co_await r.changed();
  });
  BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
  waiting.cancel();
  BOOST_TEST((failure_of(std::move(waiting)) == asio::error::operation_aborted));
  w.send(2);
  BOOST_TEST(r.has_changed());
  BOOST_TEST(r.get() == 2);
}

// As tokio users check a watch: a fast sender and slow receivers on every executor kind; each
// receiver sees values in increasing order only, and the last one sent before close().
CORAL_TEST_CASE_ON_EACH_PLACE(slow_receivers_never_go_back_and_all_see_the_last_value, every_place) {
  constexpr int values = 2000, receivers = 4;
  coral::watch<int> w(0);
  std::vector<coral::job<std::pair<int, int>>> jobs;
  for (int i = 0; i < receivers; ++i) {
    jobs.push_back(
        coral::spawn(place.get_executor(), [i, r = w.subscribe()]() mutable -> coral::task<std::pair<int, int>> {
          std::minstd_rand random(static_cast<unsigned>(i));
          int last = 0, backwards = 0;
          for (;;) {
            try {
              co_await r.changed();
            } catch (const coral::channel_closed&) {
              break;
            }
            const int v = r.get();
            if (v <= last) ++backwards;
            last = v;
            for (int y = static_cast<int>(random() % 4); y > 0; --y) co_await coral::yield();
          }
          co_return std::pair{last, backwards};
        }));
  }
  auto sender = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
    for (int v = 1; v <= values; ++v) {
      w.send(v);
      if (v % 64 == 0) co_await coral::yield();
    }
    w.close();
  });
  get_within(sender);
  for (auto& j : jobs) {
    const auto [last, backwards] = get_within(j);
    BOOST_TEST(last == values);
    BOOST_TEST(backwards == 0);
  }
}

BOOST_AUTO_TEST_CASE(destroying_a_context_frees_its_waiting_receivers_and_a_later_send_is_harmless) {
  coral::watch<int> w(0);
  {
    asio::io_context ctx(1);
    for (int i = 0; i < 3; ++i) {
      coral::spawn(ctx, [r = w.subscribe()]() mutable -> coral::task<> {
        lifetime alive;
        co_await r.changed();
      });
    }
    ctx.poll();
    BOOST_TEST(lifetime::alive == 3);
  }
  BOOST_TEST(lifetime::alive == 0);
  w.send(1);
  w.close();
}

BOOST_AUTO_TEST_CASE(a_move_only_value_is_shared_not_copied_and_every_value_is_destroyed) {
  asio::io_context ctx(1);
  {
    coral::watch<std::unique_ptr<lifetime>> w(std::make_unique<lifetime>());
    auto r = w.subscribe();
    auto kept = r.borrow();  // the initial value, kept while it is replaced
    w.send(std::make_unique<lifetime>());
    w.send(std::make_unique<lifetime>());  // the second is destroyed here: nobody borrows it
    BOOST_TEST(lifetime::alive == 2);
    auto j = coral::spawn(ctx, [&]() -> coral::task<bool> {
      co_await r.changed();
      co_return r.borrow()->get() != kept->get();
    });
    ctx.run();
    BOOST_TEST(get_within(std::move(j)));
    kept.reset();
    BOOST_TEST(lifetime::alive == 1);
  }
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// Readers and writers, as std::shared_mutex users write them, on tasks from `executor_of(i)`:
// every task does `rounds` rounds, each a write (one in `write_every`) or a read, suspending
// inside. A writer increments a plain int by reading it, suspending and writing it back; a reader
// reads it twice across a suspension. Any reader beside a writer, or two writers, is counted.
// Afterwards the mutex is free: one writer gets in, then nobody else.
template <class ExecutorOf>
void check_readers_writers_exclusion(ExecutorOf executor_of, int tasks, int rounds, int write_every) {
  for (const lock_style style : lock_styles) {
    coral::shared_mutex m;
    int counter = 0;
    std::atomic<int> readers{0}, writers{0}, violations{0}, peak_readers{0}, writes{0};
    std::vector<coral::job<>> jobs;
    for (int t = 0; t < tasks; ++t) {
      jobs.push_back(coral::spawn(executor_of(t), [&, t, rounds, style, write_every]() -> coral::task<> {
        for (int r = 0; r < rounds; ++r) {
          if ((t + r) % write_every == 0) {
            std::optional<coral::shared_mutex_lock> guard;
            if (style == lock_style::std_style) {
              co_await m.lock();
            } else {
              guard.emplace(co_await m.scoped_lock());
            }
            if (++writers != 1 || readers.load() != 0) ++violations;
            const int seen = counter;
            co_await coral::yield();
            counter = seen + 1;
            ++writes;
            if (--writers != 0 || readers.load() != 0) ++violations;
            if (style == lock_style::std_style) m.unlock();
          } else {
            std::optional<coral::shared_mutex_shared_lock> guard;
            if (style == lock_style::std_style) {
              co_await m.lock_shared();
            } else {
              guard.emplace(co_await m.scoped_lock_shared());
            }
            const int now = ++readers;
            for (int seen = peak_readers.load(); now > seen && !peak_readers.compare_exchange_weak(seen, now);) {
            }
            if (writers.load() != 0) ++violations;
            const int seen = counter;
            co_await coral::yield();
            if (counter != seen || writers.load() != 0) ++violations;
            --readers;
            if (style == lock_style::std_style) m.unlock_shared();
          }
        }
      }));
    }
    for (auto& j : jobs) get_within(j);
    BOOST_TEST(violations.load() == 0);
    BOOST_TEST(counter == writes.load());
    BOOST_TEST(writes.load() > 0);
    BOOST_TEST(peak_readers.load() >= 1);
    BOOST_TEST(m.try_lock());
    BOOST_TEST(!m.try_lock());
    BOOST_TEST(!m.try_lock_shared());
    m.unlock();
    BOOST_TEST(m.try_lock_shared());
    BOOST_TEST(m.try_lock_shared());
    BOOST_TEST(!m.try_lock());
    m.unlock_shared();
    m.unlock_shared();
    BOOST_CHECK_THROW(m.unlock_shared(), std::logic_error);
    BOOST_CHECK_THROW(m.unlock(), std::logic_error);
  }
}

// `n` rounds of work, fewer on new_thread_executor (where every resumption starts a thread).
int rounds_for(place& p, int n) {
  return dynamic_cast<on_new_thread_executor*>(&p) ? n / 10 : n;
}

// Records, in order, each task entering ("W1 in") and leaving ("W1 out") the lock.
struct entry_log {
  std::vector<std::string> lines;
  void operator()(const std::string& who, const char* what) { lines.push_back(who + " " + what); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(shared_mutex)

CORAL_TEST_CASE_ON_EACH_PLACE(readers_share_and_writers_exclude_in_both_styles, every_place) {
  check_readers_writers_exclusion([&](int) { return place.get_executor(); }, 8, rounds_for(place, 150), 3);
}

BOOST_AUTO_TEST_CASE(readers_and_writers_exclude_under_contention_on_multi_threaded_executors) {
  {
    asio::thread_pool pool(2);
    check_readers_writers_exclusion([&](int) { return asio::any_io_executor(pool.get_executor()); }, 6, 1500, 4);
    check_readers_writers_exclusion([&](int) { return asio::any_io_executor(asio::make_strand(pool)); }, 6, 1500, 2);
  }
  running_io_context ctx(2);
  check_readers_writers_exclusion([&](int) { return asio::any_io_executor(ctx.get_executor()); }, 6, 1500, 5);
  check_readers_writers_exclusion(
      [](int t) {
        switch (t % 3) {
          case 0:
            return asio::any_io_executor(coral::loop_executor{});
          case 1:
            return asio::any_io_executor(coral::pool_executor{});
          default:
            return asio::any_io_executor(coral::new_thread_executor{});
        }
      },
      6, 300, 3);
}

// FIFO with no writer starvation: a waiting writer holds back the readers that come after it,
// also while readers hold the lock; when it unlocks, the readers queued behind it get the lock
// together, up to the next writer.
BOOST_AUTO_TEST_CASE(a_waiting_writer_holds_back_later_readers_and_the_readers_behind_it_enter_together) {
  asio::io_context ctx(1);
  coral::shared_mutex m;
  entry_log log;
  BOOST_REQUIRE(m.try_lock_shared());  // R0
  auto writer = [&](std::string who) -> coral::task<> {
    co_await m.lock();
    log(who, "in");
    co_await coral::yield();
    log(who, "out");
    m.unlock();
  };
  auto reader = [&](std::string who) -> coral::task<> {
    auto guard = co_await m.scoped_lock_shared();
    log(who, "in");
    co_await coral::yield();
    co_await coral::yield();
    log(who, "out");
  };
  coral::spawn(ctx, writer("W1"));
  coral::spawn(ctx, reader("R2"));
  coral::spawn(ctx, reader("R3"));
  coral::spawn(ctx, writer("W4"));
  coral::spawn(ctx, reader("R5"));
  ctx.poll();
  ctx.restart();
  BOOST_TEST(log.lines.empty());     // R2 waits behind W1 although only readers hold the lock
  BOOST_TEST(!m.try_lock_shared());  // nor does a try overtake W1
  BOOST_TEST(!m.try_lock());
  m.unlock_shared();              // R0 goes: W1 is handed the lock
  BOOST_TEST(log.lines.empty());  // posted, not resumed inside unlock_shared()
  ctx.run();
  BOOST_TEST(log.lines == (std::vector<std::string>{"W1 in", "W1 out", "R2 in", "R3 in", "R2 out", "R3 out", "W4 in",
                                                    "W4 out", "R5 in", "R5 out"}),
             boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_CASE(unlocking_what_is_not_held_throws_and_changes_nothing) {
  coral::shared_mutex m;
  BOOST_CHECK_THROW(m.unlock(), std::logic_error);
  BOOST_CHECK_THROW(m.unlock_shared(), std::logic_error);
  BOOST_REQUIRE(m.try_lock());
  BOOST_CHECK_THROW(m.unlock_shared(), std::logic_error);  // a writer holds it: no reader to let go
  BOOST_TEST(!m.try_lock_shared());
  BOOST_TEST(!m.try_lock());
  m.unlock();
  BOOST_CHECK_THROW(m.unlock(), std::logic_error);
  BOOST_REQUIRE(m.try_lock_shared());
  BOOST_CHECK_THROW(m.unlock(), std::logic_error);  // a reader holds it: no writer to let go
  BOOST_TEST(!m.try_lock());
  m.unlock_shared();
  BOOST_TEST(m.try_lock());
  m.unlock();
  // Guards: a writer's guard whose lock was also unlocked by hand gives nothing back, also when
  // another holder has the mutex by then; a reader's guard gives back its shared lock.
  asio::io_context ctx(1);
  auto j = coral::spawn(ctx, [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    {
      auto guard = co_await m.scoped_lock();
      m.unlock();
      BOOST_TEST(m.try_lock());  // another writer now
    }
    seen.push_back(m.try_lock_shared() ? "freed another's lock" : "kept the other's lock");
    m.unlock();
    {
      auto guard = co_await m.scoped_lock();
      m.unlock();
      BOOST_TEST(m.try_lock_shared());  // a reader now
    }
    seen.push_back(m.try_lock() ? "freed the reader's lock" : "kept the reader's lock");
    m.unlock_shared();
    {
      auto a = co_await m.scoped_lock_shared();
      auto b = co_await m.scoped_lock_shared();
      BOOST_TEST(!m.try_lock());
      b.unlock();
      BOOST_TEST(!b.owns_lock());
      BOOST_TEST(!m.try_lock());
    }
    seen.push_back(m.try_lock() ? "free" : "held");
    m.unlock();
    co_return seen;
  });
  ctx.run();
  BOOST_TEST(j.get_result() == (std::vector<std::string>{"kept the other's lock", "kept the reader's lock", "free"}),
             boost::test_tools::per_element());
}

// A writer that gives up (cancelled, timed out, lost a race) lets in the readers it held back.
CORAL_TEST_CASE_ON_EACH_PLACE(a_writer_that_gives_up_lets_in_the_readers_behind_it, every_place) {
  coral::shared_mutex m;
  coral::event never;
  BOOST_REQUIRE(m.try_lock_shared());
  for (std::string how : {"cancelled", "timed out", "lost a race"}) {
    BOOST_TEST_CONTEXT(how) {
      auto started = std::make_shared<std::promise<void>>();
      auto writer = coral::spawn(place.get_executor(), [&, how, started]() -> coral::task<std::string> {
        try {
          if (how == "cancelled") {
            started->set_value();
            co_await m.lock();
          } else if (how == "timed out") {
            started->set_value();
            co_await coral::with_timeout(20ms, m.lock());
          } else {
            started->set_value();
            auto r = co_await coral::when_any(m.lock(), 20ms);
            co_return r.index() == 1 ? "lost" : "won";
          }
          co_return "locked";
        } catch (const coral::timeout_error&) {
          co_return "timeout";
        } catch (const boost::system::system_error& e) {
          co_return outcome_of(e);
        }
      });
      BOOST_REQUIRE(started->get_future().wait_for(patience) == std::future_status::ready);
      // Until the writer is queued, a reader still gets in; from then on none does.
      const auto give_up_at = std::chrono::steady_clock::now() + patience;
      while (m.try_lock_shared()) {
        m.unlock_shared();
        BOOST_REQUIRE(std::chrono::steady_clock::now() < give_up_at);
        std::this_thread::yield();
      }
      // A reader that comes after the writer: it waits behind it.
      auto reader = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
        co_await m.lock_shared();
        m.unlock_shared();
      });
      if (how == "cancelled") writer.cancel();
      get_within(std::move(reader));  // in while R0 still holds the lock
      BOOST_TEST(get_within(std::move(writer)) == (how == "cancelled"   ? "aborted"
                                                   : how == "timed out" ? "timeout"
                                                                        : "lost"));
      BOOST_TEST(!m.try_lock());  // R0 still holds it, nothing more
    }
  }
  m.unlock_shared();
  BOOST_TEST(m.try_lock());
}

CORAL_TEST_CASE_ON_EACH_PLACE(raced_timed_and_joined_locks_of_both_kinds_are_held_only_when_they_win, every_place) {
  coral::shared_mutex m;
  coral::event never;
  auto fails = []() -> coral::task<> {
    co_await coral::yield();
    throw std::runtime_error("failed");
  };
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    co_await coral::with_timeout(10s, m.lock_shared());
    try {
      co_await coral::with_timeout(5ms, m.lock());
      seen.push_back("writer beside a reader");
    } catch (const coral::timeout_error&) {
      seen.push_back("timeout");
    }
    co_await m.lock_shared();  // the writer that gave up holds back nobody
    m.unlock_shared();
    m.unlock_shared();
    auto raced = co_await coral::when_any(m.lock(), never.wait());
    seen.push_back(raced.index() == 0 && !m.try_lock_shared() ? "won, held" : "not held");
    const auto lost = co_await (m.lock_shared() || 5ms);
    seen.push_back(lost.index() == 1 ? "slept" : "reader beside a writer");
    m.unlock();
    auto guard = co_await coral::with_timeout(1s, m.scoped_lock_shared());
    seen.push_back(guard.owns_lock() && !m.try_lock() ? "shared guard" : "no guard");
    guard.unlock();
    for (int i = 0; i < 10; ++i) {
      try {
        co_await coral::when_all(m.lock(), fails());
      } catch (const std::runtime_error&) {
      }
      try {
        co_await (m.lock_shared() && fails());
      } catch (const std::runtime_error&) {
      }
    }
    seen.push_back(m.try_lock() ? "dropped locks given back" : "a dropped lock kept");
    m.unlock();
    co_return seen;
  });
  BOOST_TEST(get_within(std::move(j)) == (std::vector<std::string>{"timeout", "won, held", "slept", "shared guard",
                                                                   "dropped locks given back"}),
             boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
}

// unlock() / unlock_shared() hand the lock to waiters being cancelled at that moment: afterwards
// the lock is free (nothing lost to a cancelled waiter) and no reader was ever beside a writer.
BOOST_AUTO_TEST_CASE(a_lock_handed_to_waiters_cancelled_at_that_moment_is_neither_lost_nor_shared_with_a_writer) {
  asio::thread_pool pool(2);
  constexpr int iterations = 800, waiters = 4;
  std::atomic<int> readers{0}, writers{0};
  std::atomic<bool> overlapped{false};
  int lost = 0, locked_total = 0;
  for (int it = 0; it < iterations; ++it) {
    coral::shared_mutex m;
    const bool held_by_writer = it % 2 == 0;
    BOOST_REQUIRE(held_by_writer ? m.try_lock() : m.try_lock_shared());
    std::vector<coral::job<>> jobs;
    for (int i = 0; i < waiters; ++i) {
      const bool write = (i + it) % 3 == 0;
      jobs.push_back(coral::spawn(asio::make_strand(pool), [&, write]() -> coral::task<> {
        if (write) {
          auto guard = co_await m.scoped_lock();
          if (writers.fetch_add(1) != 0 || readers.load() != 0) overlapped = true;
          writers.fetch_sub(1);
        } else {
          auto guard = co_await m.scoped_lock_shared();
          readers.fetch_add(1);
          if (writers.load() != 0) overlapped = true;
          readers.fetch_sub(1);
        }
      }));
    }
    std::promise<void> unlock_done;
    asio::post(pool, [&] {
      held_by_writer ? m.unlock() : m.unlock_shared();
      unlock_done.set_value();
    });
    for (auto& j : jobs) j.cancel();
    for (auto& j : jobs) {
      auto e = failure_of(j);
      BOOST_REQUIRE(!e || e == asio::error::operation_aborted);
      if (!e) ++locked_total;
    }
    unlock_done.get_future().wait();
    if (!m.try_lock()) {
      ++lost;
    } else {
      m.unlock();
    }
  }
  BOOST_TEST(lost == 0);
  BOOST_TEST(!overlapped);
  BOOST_TEST(locked_total > 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_its_waiting_readers_and_writers_and_later_unlocks_are_harmless,
                              Context, owned_contexts) {
  coral::shared_mutex m;
  BOOST_REQUIRE(m.try_lock());
  std::vector<coral::job<>> jobs;
  {
    Context ctx;
    for (int i = 0; i < 4; ++i) {
      jobs.push_back(coral::spawn(ctx.get_executor(), [&m, i]() -> coral::task<> {
        lifetime l;
        if (i % 2) {
          co_await m.lock();
        } else {
          co_await m.lock_shared();
        }
      }));
    }
    ctx.settle();
    BOOST_TEST(lifetime::alive == 4);
  }
  BOOST_TEST(lifetime::alive == 0);
  m.unlock();
  for (auto& j : jobs) BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(m.try_lock());  // nothing was handed to the dead waiters
}

// unlock() hands the lock to readers whose resumptions are queued on a context that is then
// destroyed: they never resume, and their shared locks are given back.
BOOST_AUTO_TEST_CASE(locks_handed_to_tasks_destroyed_before_they_resume_are_handed_on) {
  coral::shared_mutex m;
  BOOST_REQUIRE(m.try_lock());
  std::vector<coral::job<>> jobs;
  {
    asio::io_context ctx(1);
    for (int i = 0; i < 3; ++i) {
      jobs.push_back(coral::spawn(ctx, [&m]() -> coral::task<> {
        lifetime l;
        co_await m.lock_shared();
      }));
    }
    jobs.push_back(coral::spawn(ctx, [&m]() -> coral::task<> {
      lifetime l;
      auto guard = co_await m.scoped_lock();
    }));
    ctx.poll();
    m.unlock();  // the three readers are handed the lock; their resumptions are never run
  }
  BOOST_TEST(lifetime::alive == 0);
  for (auto& j : jobs) BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_CASE(destroying_a_shared_mutex_fails_its_waiters_with_operation_aborted) {
  asio::io_context ctx(1);
  auto m = std::make_unique<coral::shared_mutex>();
  BOOST_REQUIRE(m->try_lock());
  auto reader = coral::spawn(ctx, [&]() -> coral::task<> { co_await m->lock_shared(); });
  auto writer = coral::spawn(ctx, [&]() -> coral::task<> { co_await m->lock(); });
  ctx.poll();
  ctx.restart();
  m.reset();
  ctx.run();
  BOOST_TEST((failure_of(std::move(reader)) == asio::error::operation_aborted));
  BOOST_TEST((failure_of(std::move(writer)) == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(condition_variable)

// Producers and consumers over a queue guarded by the mutex, as std::condition_variable users
// write them: every item is consumed exactly once, consumers see the queue only with the mutex
// held, and every consumer ends once the producers are done.
CORAL_TEST_CASE_ON_EACH_PLACE(producers_and_consumers_with_a_predicate_lose_and_duplicate_nothing, every_place) {
  constexpr int producers = 3, consumers = 3;
  const int items = rounds_for(place, 200);
  coral::async_mutex m;
  coral::condition_variable not_empty;
  std::deque<int> queue;
  int producing = producers;
  std::atomic<int> inside{0}, overlaps{0};
  std::vector<coral::job<>> jobs;
  std::vector<coral::job<long>> consumed;
  for (int p = 0; p < producers; ++p) {
    jobs.push_back(coral::spawn(place.get_executor(), [&, p]() -> coral::task<> {
      for (int i = 0; i < items; ++i) {
        co_await m.lock();
        if (++inside != 1) ++overlaps;
        queue.push_back(p * items + i + 1);
        --inside;
        m.unlock();
        // Alternately outside and inside the lock, both allowed.
        if (i % 2) {
          not_empty.notify_one();
        } else {
          co_await m.lock();
          not_empty.notify_one();
          m.unlock();
        }
        if (i % 16 == 0) co_await coral::yield();
      }
      co_await m.lock();
      if (--producing == 0) not_empty.notify_all();
      m.unlock();
    }));
  }
  for (int c = 0; c < consumers; ++c) {
    consumed.push_back(coral::spawn(place.get_executor(), [&]() -> coral::task<long> {
      long sum = 0;
      co_await m.lock();
      for (;;) {
        co_await not_empty.wait(m, [&] { return !queue.empty() || producing == 0; });
        if (++inside != 1) ++overlaps;  // the wait returned holding m
        if (queue.empty()) {
          --inside;
          break;
        }
        sum += queue.front();
        queue.pop_front();
        --inside;
        if (queue.size() % 3 == 0) {  // sometimes let the others in
          m.unlock();
          co_await coral::yield();
          co_await m.lock();
        }
      }
      m.unlock();
      co_return sum;
    }));
  }
  for (auto& j : jobs) get_within(j);
  long total = 0;
  for (auto& j : consumed) total += get_within(j);
  const long n = long{producers} * items;
  BOOST_TEST(total == n * (n + 1) / 2);
  BOOST_TEST(queue.empty());
  BOOST_TEST(overlaps.load() == 0);
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_CASE(notify_wakes_waiters_in_order_after_they_lock_the_mutex_again_never_inside_notify) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  coral::condition_variable cv;
  std::vector<std::string> log;
  for (int i = 0; i < 3; ++i) {
    coral::spawn(ctx, [&, i]() -> coral::task<> {
      co_await m.lock();
      co_await cv.wait(m);
      log.push_back("woke " + std::to_string(i) + (m.try_lock() ? " without the lock" : " holding the lock"));
      m.unlock();
    });
  }
  cv.notify_one();  // nobody waits yet: not remembered
  ctx.poll();
  ctx.restart();
  BOOST_TEST(log.empty());
  BOOST_TEST(m.try_lock());  // every waiter unlocked m when it began to wait
  cv.notify_one();
  ctx.poll();
  ctx.restart();
  BOOST_TEST(log.empty());  // waiter 0 waits for m
  m.unlock();
  BOOST_TEST(log.empty());  // posted, not resumed inside unlock()
  ctx.poll();
  ctx.restart();
  cv.notify_all();
  BOOST_TEST(log.size() == 1u);  // not resumed inside notify_all()
  ctx.run();
  BOOST_TEST(log == (std::vector<std::string>{"woke 0 holding the lock", "woke 1 holding the lock",
                                              "woke 2 holding the lock"}),
             boost::test_tools::per_element());
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_CASE(a_wait_with_the_mutex_unlocked_throws_logic_error) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  coral::condition_variable cv;
  auto j = coral::spawn(ctx, [&]() -> coral::task<std::string> {
    try {
      co_await cv.wait(m);
    } catch (const std::logic_error&) {
      co_return "logic_error";
    }
    co_return "waited";
  });
  ctx.run();
  BOOST_TEST(j.get_result() == "logic_error");
  BOOST_TEST(m.try_lock());
}

// A wait that fails (cancelled, timed out, lost its race) locks the mutex again before it throws:
// while another task holds it, the failed wait does not return.
CORAL_TEST_CASE_ON_EACH_PLACE(a_wait_that_fails_returns_holding_the_mutex_and_one_that_wins_a_race_too, every_place) {
  coral::async_mutex m;
  coral::condition_variable cv;
  coral::event never;
  coral::job<> notifier;
  auto j = coral::spawn(place.get_executor(), [&]() -> coral::task<std::vector<std::string>> {
    std::vector<std::string> seen;
    auto held = [&] { return m.try_lock() ? (m.unlock(), " without the lock") : " holding the lock"; };
    co_await m.lock();
    try {
      co_await coral::with_timeout(5ms, cv.wait(m));
      seen.push_back("notified");
    } catch (const coral::timeout_error&) {
      seen.push_back(std::string("timeout") + held());
    }
    auto r = co_await coral::when_any(cv.wait(m), 5ms);
    seen.push_back((r.index() == 1 ? "slept" : "notified") + std::string(held()));
    auto o = co_await (cv.wait(m) || never.wait() || 5ms);
    seen.push_back((o.index() == 2 ? "slept" : "woke") + std::string(held()));
    // A notification from another task wins the race for the wait.
    notifier = coral::spawn(place.get_executor(), [&]() -> coral::task<> {
      co_await m.lock();
      cv.notify_one();
      m.unlock();
    });
    auto n = co_await coral::when_any(cv.wait(m), never.wait());
    seen.push_back((n.index() == 0 ? "notified" : "never") + std::string(held()));
    // Nested: the timeout inside a race.
    try {
      co_await coral::when_any(coral::with_timeout(2ms, cv.wait(m)), never.wait());
      seen.push_back("nested notified");
    } catch (const coral::timeout_error&) {
      seen.push_back(std::string("nested") + held());
    }
    m.unlock();
    co_return seen;
  });
  BOOST_TEST(
      get_within(std::move(j)) ==
          (std::vector<std::string>{"timeout holding the lock", "slept holding the lock", "slept holding the lock",
                                    "notified holding the lock", "nested holding the lock"}),
      boost::test_tools::per_element());
  get_within(std::move(notifier));
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_CASE(a_cancelled_wait_locks_the_mutex_again_before_it_throws) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  coral::condition_variable cv;
  std::vector<std::string> log;
  auto waiter = coral::spawn(ctx, [&]() -> coral::task<> {
    co_await m.lock();
    try {
      co_await cv.wait(m);
    } catch (const boost::system::system_error& e) {
      log.push_back(outcome_of(e) + (m.try_lock() ? " without the lock" : " holding the lock"));
      m.unlock();
      throw;
    }
  });
  ctx.poll();
  ctx.restart();
  BOOST_REQUIRE(m.try_lock());  // someone else holds m when the wait is cancelled
  waiter.cancel();
  ctx.poll();
  ctx.restart();
  BOOST_TEST(log.empty());  // the cancelled wait waits for m
  cv.notify_one();          // nobody waits on the condition any more
  m.unlock();
  ctx.run();
  BOOST_TEST(log == (std::vector<std::string>{"aborted holding the lock"}), boost::test_tools::per_element());
  BOOST_TEST(failure_of(waiter) == asio::error::operation_aborted);
  BOOST_TEST(m.try_lock());
  // A task already cancelled fails at once, still holding m.
  m.unlock();
  ctx.restart();
  coral::event never;
  auto cancelled = coral::spawn(ctx, [&]() -> coral::task<std::string> {
    co_await m.lock();
    try {
      co_await never.wait();  // cancelled here
    } catch (const boost::system::system_error&) {
    }
    std::string outcome = "waited";
    try {
      co_await cv.wait(m);
    } catch (const boost::system::system_error& e) {
      outcome = outcome_of(e) + (m.try_lock() ? " without the lock" : " holding the lock");
    }
    m.unlock();
    co_return outcome;
  });
  ctx.poll();
  ctx.restart();
  cancelled.cancel();
  ctx.run();
  BOOST_TEST(cancelled.get_result() == "aborted holding the lock");
  BOOST_TEST(m.try_lock());
}

// notify_one() and a failing wait meet: the notification is not lost. Of two waiters A and B, A
// gives up (cancelled, timed out, or beaten in a when_any) at about the moment notify_one() is
// called: either A was notified (it returns normally, or wins its race; B still waits) or A's
// wait failed and B was notified.
BOOST_AUTO_TEST_CASE(a_notification_that_meets_a_failing_wait_goes_to_the_next_waiter) {
  asio::thread_pool pool(2);
  std::mt19937 random(11);
  int a_notified = 0, b_notified = 0;
  for (int it = 0; it < 600; ++it) {
    coral::async_mutex m;
    coral::condition_variable cv;
    const int mode = it % 3;  // 0: cancelled, 1: with_timeout, 2: when_any with a sleep
    const bool timed = mode != 0;
    auto a_started = std::make_shared<std::promise<void>>();
    auto b_started = std::make_shared<std::promise<void>>();
    auto waiter = [&, mode](std::shared_ptr<std::promise<void>> started,
                            std::chrono::microseconds timeout) -> coral::task<bool> {
      co_await m.lock();
      started->set_value();  // (m is held: the notifier cannot notify before the wait is queued)
      bool notified = true;
      try {
        if (timeout.count() > 0 && mode == 1) {
          co_await coral::with_timeout(timeout, cv.wait(m));
        } else if (timeout.count() > 0) {
          notified = (co_await coral::when_any(cv.wait(m), timeout)).index() == 0;
        } else {
          co_await cv.wait(m);
        }
      } catch (const boost::system::system_error&) {
        notified = false;
      }
      m.unlock();
      co_return notified;
    };
    auto a = coral::spawn(asio::make_strand(pool),
                          waiter(a_started, timed ? std::chrono::microseconds(1 + random() % 200) : 0us));
    BOOST_REQUIRE(a_started->get_future().wait_for(patience) == std::future_status::ready);
    auto b = coral::spawn(asio::make_strand(pool), waiter(b_started, 0us));
    BOOST_REQUIRE(b_started->get_future().wait_for(patience) == std::future_status::ready);
    // The notifier holds m to notify, as a std::condition_variable user would: both waits are
    // queued by then (or A's has failed).
    auto notifier = coral::spawn(asio::make_strand(pool),
                                 [&, notify_after = std::chrono::microseconds(random() % 200)]() -> coral::task<> {
                                   co_await coral::sleep_for(notify_after);
                                   co_await m.lock();
                                   cv.notify_one();
                                   m.unlock();
                                 });
    if (!timed) a.cancel();
    const bool a_got_it = get_within(std::move(a));
    get_within(std::move(notifier));
    if (a_got_it) {
      ++a_notified;
      b.cancel();  // B was not notified: it still waits
      BOOST_TEST_REQUIRE(!get_within(std::move(b)), "iteration " << it << ": one notify_one() woke two waits");
    } else {
      ++b_notified;  // A's wait failed: the notification went to B, which needs no other
      BOOST_TEST_REQUIRE(get_within(std::move(b)), "iteration " << it << ": the notification was lost");
    }
    BOOST_TEST_REQUIRE(m.try_lock());
  }
  BOOST_TEST(a_notified + b_notified == 600);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_its_waiting_tasks_and_later_notifies_are_harmless, Context,
                              owned_contexts) {
  coral::async_mutex m;
  coral::condition_variable cv;
  std::vector<coral::job<>> jobs;
  {
    Context ctx;
    for (int i = 0; i < 4; ++i) {
      jobs.push_back(coral::spawn(ctx.get_executor(), [&m, &cv]() -> coral::task<> {
        lifetime l;
        co_await m.lock();
        co_await cv.wait(m);
        m.unlock();
      }));
    }
    ctx.settle();
    BOOST_TEST(lifetime::alive == 4);
    BOOST_REQUIRE(m.try_lock());  // they all wait on the condition, not holding m
    cv.notify_one();              // the first one now waits for m, the others on the condition
  }
  BOOST_TEST(lifetime::alive == 0);
  cv.notify_all();
  m.unlock();
  for (auto& j : jobs) BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(m.try_lock());  // nothing was handed to the dead waiters
}

// The waiter is notified and m handed to it, but its context is destroyed before it resumes: the
// lock goes on.
BOOST_AUTO_TEST_CASE(a_lock_handed_to_a_notified_task_destroyed_before_it_resumes_is_handed_on) {
  coral::async_mutex m;
  coral::condition_variable cv;
  coral::job<> j;
  {
    asio::io_context ctx(1);
    j = coral::spawn(ctx, [&m, &cv]() -> coral::task<> {
      lifetime l;
      co_await m.lock();
      co_await cv.wait(m);
      m.unlock();
    });
    ctx.poll();
    cv.notify_one();  // m is free: the re-lock is granted; the resumption is never run
    BOOST_TEST(!m.try_lock());
  }
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_CASE(destroying_a_condition_variable_fails_its_waiters_after_they_lock_the_mutex_again) {
  asio::io_context ctx(1);
  coral::async_mutex m;
  auto cv = std::make_unique<coral::condition_variable>();
  auto j = coral::spawn(ctx, [&]() -> coral::task<std::string> {
    co_await m.lock();
    std::string outcome = "notified";
    try {
      co_await cv->wait(m);
    } catch (const boost::system::system_error& e) {
      outcome = outcome_of(e) + (m.try_lock() ? " without the lock" : " holding the lock");
    }
    m.unlock();
    co_return outcome;
  });
  ctx.poll();
  ctx.restart();
  cv.reset();
  ctx.run();
  BOOST_TEST(j.get_result() == "aborted holding the lock");
  BOOST_TEST(m.try_lock());
}

BOOST_AUTO_TEST_SUITE_END()
