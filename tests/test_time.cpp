#define BOOST_TEST_MODULE coral time
#include <boost/test/unit_test.hpp>
#include <mutex>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

BOOST_AUTO_TEST_SUITE(sleep_for)

BOOST_AUTO_TEST_CASE(awaiting_a_duration_sleeps_without_blocking_and_resumes_on_the_executor) {
  coral::event_loop loop;
  std::atomic<int> ran_meanwhile{0};
  auto sleeper = [&]() -> coral::task<bool> {
    auto start = clock_type::now();
    co_await 50ms;
    bool on_loop = std::this_thread::get_id() == loop.thread_id();
    co_return on_loop&& clock_type::now() - start >= 50ms && ran_meanwhile == 1;
  };
  auto j = coral::spawn(loop.get_executor(), sleeper());
  // The loop thread is free while the task sleeps.
  get_within(coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    ++ran_meanwhile;
    co_return;
  }));
  BOOST_TEST(get_within(j));
}

BOOST_AUTO_TEST_CASE(sleep_for_and_sleep_until_wait_on_the_steady_clock) {
  auto t = []() -> coral::task<bool> {
    auto start = clock_type::now();
    co_await coral::sleep_for(20ms);
    bool after_for = clock_type::now() - start >= 20ms;
    co_await coral::sleep_until(start + 40ms);
    co_return after_for&& clock_type::now() - start >= 40ms;
  };
  BOOST_TEST(coral::sync_wait(t()));
}

BOOST_AUTO_TEST_CASE(a_duration_too_long_for_the_clock_means_never) {
  // (Wrapped around, it would be a deadline in the past: the time-out would fire at once.)
  auto t = []() -> coral::task<std::vector<int>> {
    auto work = []() -> coral::task<int> {
      co_await coral::sleep_for(10ms);
      co_return 7;
    };
    std::vector<int> got;
    got.push_back(co_await coral::with_timeout(std::chrono::hours::max(), work()));
    got.push_back(co_await coral::with_timeout(std::chrono::nanoseconds::max(), work()));
    got.push_back(co_await coral::with_timeout(std::chrono::years(300), work()));
    got.push_back(co_await coral::with_timeout(std::chrono::milliseconds(10'000'000'000'000), work()));
    got.push_back(co_await coral::with_timeout(std::chrono::duration<double>(1e300), work()));
    auto r = co_await coral::when_any(coral::sleep_for(std::chrono::hours::max()), work());
    got.push_back(static_cast<int>(r.index()));
    auto s = co_await coral::when_any(coral::sleep_for(std::chrono::years(1000)), work());
    got.push_back(static_cast<int>(s.index()));
    co_return got;
  };
  BOOST_TEST((coral::sync_wait(t()) == std::vector<int>{7, 7, 7, 7, 7, 1, 1}));
}

BOOST_AUTO_TEST_CASE(a_cancelled_task_fails_its_next_sleep_at_once) {
  std::promise<void> started;
  std::promise<void> proceed;
  // On the process-wide loop: the pool thread posts back to it, so it must outlive the test.
  auto j = coral::spawn(coral::loop_executor{}, [&]() -> coral::task<std::string> {
    co_await coral::on(coral::pool_executor{}, [&]() -> coral::task<> {
      started.set_value();
      proceed.get_future().wait();  // test only: hold the task until cancel() was called
      co_return;
    }());
    try {
      co_await 1h;
    } catch (const boost::system::system_error& e) {
      co_return e.code() == asio::error::operation_aborted ? "aborted" : "other error";
    }
    co_return "slept";
  });
  started.get_future().wait();
  j.cancel();
  proceed.set_value();
  BOOST_TEST(get_within(j) == "aborted");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(scheduler)

BOOST_AUTO_TEST_CASE(scheduler_runs_work_after_a_delay_on_its_executor) {
  coral::event_loop loop;
  coral::scheduler s(loop.get_executor());
  std::promise<std::pair<bool, clock_type::duration>> ran;
  auto start = clock_type::now();
  s.submit_after(
      [&] {
        ran.set_value({std::this_thread::get_id() == loop.thread_id(), clock_type::now() - start});
      },
      30ms);
  auto [on_loop, elapsed] = ran.get_future().get();
  BOOST_TEST(on_loop);
  BOOST_TEST((elapsed >= 30ms));
}

BOOST_AUTO_TEST_CASE(scheduler_submit_at_and_on_another_executor) {
  coral::event_loop loop, other;
  coral::scheduler s(loop.get_executor());
  std::promise<bool> at, elsewhere;
  auto when = clock_type::now() + 20ms;
  s.submit_at([&] { at.set_value(clock_type::now() >= when); }, when);
  s.on(other.get_executor()).after(10ms).submit([&] {
    elsewhere.set_value(std::this_thread::get_id() == other.thread_id());
  });
  BOOST_TEST(at.get_future().get());
  BOOST_TEST(elsewhere.get_future().get());
}

BOOST_AUTO_TEST_CASE(scheduler_every_repeats_until_cancelled) {
  coral::event_loop loop;
  coral::scheduler s(loop.get_executor());
  std::atomic<int> ticks{0};
  std::promise<void> three;
  auto handle = s.every(5ms, [&] {
    if (++ticks == 3) three.set_value();
  });
  BOOST_TEST((three.get_future().wait_for(patience) == std::future_status::ready));
  handle.cancel();
  // After cancel() the loop drains: a task queued behind the cancellation sees the final count.
  get_within(coral::spawn(loop.get_executor(), []() -> coral::task<> { co_return; }));
  int seen = ticks;
  get_within(coral::spawn(loop.get_executor(), []() -> coral::task<> { co_await 30ms; }));
  BOOST_TEST(ticks == seen);
}

BOOST_AUTO_TEST_CASE(scheduler_cancel_and_close_prevent_work) {
  coral::event_loop loop;
  coral::scheduler s(loop.get_executor());
  std::atomic<int> ran{0};
  auto h = s.submit_after([&] { ++ran; }, 20ms);
  s.submit_after([&] { ++ran; }, 20ms);
  h.cancel();
  s.close();
  BOOST_TEST(s.closed());
  BOOST_CHECK_THROW(s.submit([] {}), std::logic_error);
  get_within(coral::spawn(loop.get_executor(), []() -> coral::task<> { co_await 60ms; }));
  BOOST_TEST(ran == 0);
}

BOOST_AUTO_TEST_CASE(scheduler_on_a_thread_pool_is_cancelled_and_closed_from_other_threads_without_a_race) {
  // The timers of a scheduler on a multi-threaded executor were touched from several threads at
  // once (TSan). After close(), a function that was already starting may still run once (the
  // header's contract: it finishes, it is not started again); nothing more.
  for (int round = 0; round < 20; ++round) {
    asio::thread_pool pool(2);
    coral::scheduler s(pool.get_executor());
    std::atomic<int> ticks{0};
    std::promise<void> ticking;
    std::atomic<bool> told{false};
    auto tick = [&] {
      if (++ticks == 10 && !told.exchange(true)) ticking.set_value();
    };
    auto a = s.every(100us, tick);
    auto b = s.every(150us, tick);
    s.every(50us, tick);
    BOOST_TEST_REQUIRE((ticking.get_future().wait_for(patience) == std::future_status::ready));
    std::thread canceller([&] {
      a.cancel();
      b.cancel();
    });
    s.close();
    const int at_close = ticks;
    canceller.join();
    // Long enough for dozens of periods: at most the three calls in flight at close() may follow.
    get_within(coral::spawn(pool.get_executor(), []() -> coral::task<> { co_await 10ms; }));
    BOOST_TEST(ticks - at_close <= 3, "round " << round << ": " << ticks - at_close << " calls after close()");
  }
}

BOOST_AUTO_TEST_SUITE_END()
