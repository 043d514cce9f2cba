#define BOOST_TEST_MODULE coral task
#include <boost/test/unit_test.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

coral::task<int> value(int v) {
  co_return v;
}
coral::task<std::unique_ptr<int>> move_only(int v) {
  co_return std::make_unique<int>(v);
}
coral::task<int&> reference(int& r) {
  co_return r;
}
coral::task<> nothing(int& counter) {
  ++counter;
  co_return;
}

coral::task<int> level3() {
  throw std::runtime_error("from level 3");
  co_return 0;
}
coral::task<int> level2() {
  co_return co_await level3() + 1;
}
coral::task<int> level1() {
  co_return co_await level2() + 1;
}

}  // namespace

namespace {

coral::task<int, coral::pool_executor> bound_immediate() {
  co_return 1;
}
coral::task<int> inherit_immediate() {
  co_return 1;
}

// Completes at once: resume() from after_suspend().
struct immediate_awaiter : coral::awaiter<int> {
  void after_suspend() override { resume(1); }
};

// A foreign awaitable (not a coral type) that completes without suspending.
struct foreign_ready {
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<>) const noexcept { return false; }
  int await_resume() const noexcept { return 1; }
};

#define CORAL_TEST_RECORD(log, what, ...)                                \
  try {                                                                  \
    __VA_ARGS__;                                                         \
    log.push_back(std::string(what) + ": completed");                    \
  } catch (const boost::system::system_error& e) {                       \
    log.push_back(std::string(what) + ": " + coral_test::outcome_of(e)); \
  }

// Sleeps until cancelled, then tries every kind of suspension point once and records what each did.
coral::task<std::vector<std::string>> await_everything_after_cancel(coral::channel<int>& full,
                                                                    coral::channel<int>& with_room) {
  std::vector<std::string> log;
  CORAL_TEST_RECORD(log, "sleep in progress", co_await 1h);
  CORAL_TEST_RECORD(log, "sleep", co_await 1ms);
  CORAL_TEST_RECORD(log, "yield", co_await coral::yield());
  CORAL_TEST_RECORD(log, "use_task timer", {
    asio::steady_timer timer(co_await coral::this_task::executor, 1ms);
    co_await timer.async_wait(coral::use_task);
  });
  CORAL_TEST_RECORD(log, "channel receive", co_await full.receive());
  CORAL_TEST_RECORD(log, "channel send", co_await with_room.send(1));
  CORAL_TEST_RECORD(log, "bound child", co_await bound_immediate());
  CORAL_TEST_RECORD(log, "on(pool, child)", co_await coral::on(coral::pool_executor{}, inherit_immediate()));
  CORAL_TEST_RECORD(log, "awaiter<R>", {
    immediate_awaiter a;
    co_await a;
  });
  CORAL_TEST_RECORD(log, "foreign awaitable", co_await foreign_ready{});
  CORAL_TEST_RECORD(log, "future", {
    std::promise<int> never;
    co_await coral::as_awaiter(never.get_future());
  });
  CORAL_TEST_RECORD(log, "sleep again", co_await 1ms);
  co_return log;
}

template <class Executor>
void check_every_suspension_fails_after_cancel(Executor ex, const char* kind) {
  BOOST_TEST_CONTEXT("executor: " << kind) {
    coral::channel<int> full(1), with_room(1);
    BOOST_TEST(full.try_send(7));
    auto j = coral::spawn(ex, await_everything_after_cancel(full, with_room));
    j.cancel();
    const std::vector<std::string> expected{
        "sleep in progress: aborted", "sleep: aborted",           "yield: aborted",
        "use_task timer: aborted",    "channel receive: aborted", "channel send: aborted",
        "bound child: aborted",       "on(pool, child): aborted", "awaiter<R>: aborted",
        "foreign awaitable: aborted", "future: aborted",          "sleep again: aborted"};
    BOOST_TEST(get_within(j) == expected, boost::test_tools::per_element());
    BOOST_TEST(full.size() == 1u);       // the aborted receive consumed nothing
    BOOST_TEST(with_room.size() == 0u);  // the aborted send delivered nothing
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(task)

BOOST_AUTO_TEST_CASE(awaiting_a_child_returns_its_value_of_any_kind) {
  int target = 5;
  int counter = 0;
  auto body = [&]() -> coral::task<> {
    BOOST_TEST(co_await value(42) == 42);
    auto p = co_await move_only(7);
    BOOST_TEST(*p == 7);
    int& r = co_await reference(target);
    r = 6;
    co_await nothing(counter);
  };
  coral::sync_wait(body());
  BOOST_TEST(target == 6);
  BOOST_TEST(counter == 1);
}

BOOST_AUTO_TEST_CASE(an_exception_propagates_through_three_levels) {
  auto top = []() -> coral::task<std::string> {
    try {
      co_await level1();
    } catch (const std::runtime_error& e) {
      co_return e.what();
    }
    co_return "nothing thrown";
  };
  BOOST_TEST(coral::sync_wait(top()) == "from level 3");
  BOOST_CHECK_THROW(coral::sync_wait(level1()), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_task_is_lazy_until_awaited) {
  bool started = false;
  auto body = [&]() -> coral::task<> {
    started = true;
    co_return;
  };
  auto t = body();
  BOOST_TEST(!started);
  auto outer = [&]() -> coral::task<> { co_await std::move(t); };
  coral::sync_wait(outer());
  BOOST_TEST(started);
}

BOOST_AUTO_TEST_CASE(a_task_never_awaited_frees_its_frame) {
  {
    auto t = []() -> coral::task<> {
      lifetime l;
      co_return;
    }();
    auto t2 = [](lifetime) -> coral::task<> { co_return; }(lifetime{});
    BOOST_TEST(lifetime::alive == 1);  // the parameter copy lives in the frame
  }
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_million_sequential_synchronous_children_keep_the_stack_flat) {
  auto loop = []() -> coral::task<long> {
    long sum = 0;
    for (int i = 0; i < 1'000'000; ++i) sum += co_await value(1);
    co_return sum;
  };
  BOOST_TEST(coral::sync_wait(loop()) == 1'000'000);
}

BOOST_AUTO_TEST_CASE(an_inherit_child_runs_inline_without_a_queue_hop) {
  asio::io_context ctx(1);
  std::thread::id parent_thread, child_thread;
  auto child = [&]() -> coral::task<int> {
    child_thread = std::this_thread::get_id();
    co_return 1;
  };
  auto parent = [&]() -> coral::task<int> {
    parent_thread = std::this_thread::get_id();
    int sum = 0;
    for (int i = 0; i < 1000; ++i) sum += co_await child();
    co_return sum;
  };
  auto j = coral::spawn(ctx, parent());
  std::size_t handlers = ctx.run();
  BOOST_TEST(j.get_result() == 1000);
  BOOST_TEST(handlers == 1u);  // only the spawn itself went through the queue
  BOOST_TEST((child_thread == parent_thread));
}

BOOST_AUTO_TEST_CASE(a_bound_child_runs_on_its_executor_and_the_parent_comes_back) {
  // The parent runs on the process-wide loop: the pool thread finishing the child posts to it,
  // so it must outlive the test.
  const auto loop_thread = thread_of(coral::loop_executor{});
  std::thread::id child_thread, after_thread;
  auto child = [&]() -> coral::task<int, coral::pool_executor> {
    child_thread = std::this_thread::get_id();
    co_await 1ms;
    co_return 2;
  };
  auto parent = [&]() -> coral::task<int> {
    int v = co_await child();
    after_thread = std::this_thread::get_id();
    co_return v;
  };
  BOOST_TEST(get_within(coral::spawn(coral::loop_executor{}, parent())) == 2);
  BOOST_TEST((child_thread != loop_thread));
  BOOST_TEST((after_thread == loop_thread));
}

BOOST_AUTO_TEST_CASE(awaiting_a_moved_from_task_throws_logic_error) {
  auto t = []() -> coral::task<std::string> {
    auto child = value(1);
    auto stolen = std::move(child);
    try {
      co_await std::move(child);
    } catch (const std::logic_error& e) {
      co_return e.what();
    }
    co_return "";
  };
  BOOST_TEST(coral::sync_wait(t()).find("empty") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(spawning_a_moved_from_task_throws_logic_error) {
  asio::io_context ctx;
  auto t = value(1);
  auto stolen = std::move(t);
  BOOST_CHECK_THROW(coral::spawn(ctx, std::move(t)), std::logic_error);
}

// Cancellation is level-triggered: once job.cancel() has been called, the wait in progress and
// every later suspension point fail with operation_aborted, on every executor kind.
BOOST_AUTO_TEST_CASE(after_cancel_every_suspension_point_fails_with_operation_aborted_on_every_executor) {
  {
    coral::event_loop loop;
    check_every_suspension_fails_after_cancel(loop.get_executor(), "event_loop");
  }
  {
    running_io_context ctx(2);
    check_every_suspension_fails_after_cancel(ctx.get_executor(), "io_context, 2 threads");
  }
  {
    asio::thread_pool pool(2);
    check_every_suspension_fails_after_cancel(asio::make_strand(pool.get_executor()), "strand over thread_pool");
  }
  check_every_suspension_fails_after_cancel(coral::loop_executor{}, "loop_executor");
  check_every_suspension_fails_after_cancel(coral::pool_executor{}, "pool_executor");
}

BOOST_AUTO_TEST_CASE(a_cancelled_task_that_catches_operation_aborted_keeps_running_and_fails_again) {
  coral::event_loop loop;
  std::promise<void> sleeping;
  auto j = coral::spawn(loop.get_executor(), [&]() -> coral::task<int> {
    asio::post(loop.get_executor(), [&] { sleeping.set_value(); });
    int aborted = 0;
    for (int i = 0; i < 5; ++i) {
      try {
        co_await (i % 2 == 0 ? coral::sleep_for(1h) : coral::sleep_for(1ms));
      } catch (const boost::system::system_error& e) {
        aborted += e.code() == asio::error::operation_aborted;
      }
      try {
        co_await coral::yield();
      } catch (const boost::system::system_error& e) {
        aborted += e.code() == asio::error::operation_aborted;
      }
    }
    co_return aborted;  // the task is still running: it got here after ten failed awaits
  });
  BOOST_TEST_REQUIRE((sleeping.get_future().wait_for(patience) == std::future_status::ready));
  j.cancel();
  BOOST_TEST(get_within(j) == 10);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(on)

BOOST_AUTO_TEST_CASE(on_runs_a_child_elsewhere_and_returns) {
  coral::event_loop home, away;
  std::thread::id child_thread, after_thread;
  auto child = [&]() -> coral::task<int> {
    co_await coral::yield();
    child_thread = std::this_thread::get_id();
    throw std::invalid_argument("away");
    co_return 0;
  };
  auto parent = [&]() -> coral::task<std::string> {
    try {
      co_await coral::on(away.get_executor(), child());
    } catch (const std::invalid_argument& e) {
      after_thread = std::this_thread::get_id();
      co_return e.what();
    }
    co_return "";
  };
  BOOST_TEST(get_within(coral::spawn(home.get_executor(), parent())) == "away");
  BOOST_TEST((child_thread == away.thread_id()));
  BOOST_TEST((after_thread == home.thread_id()));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(yield)

BOOST_AUTO_TEST_CASE(yield_lets_other_tasks_run) {
  asio::io_context ctx(1);
  std::vector<int> order;
  auto worker = [&](int id) -> coral::task<> {
    for (int i = 0; i < 3; ++i) {
      order.push_back(id);
      co_await coral::yield();
    }
  };
  coral::spawn(ctx, worker(1));
  coral::spawn(ctx, worker(2));
  ctx.run();
  BOOST_TEST(order == (std::vector<int>{1, 2, 1, 2, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(this_task)

BOOST_AUTO_TEST_CASE(this_coro_executor_is_the_tasks_executor) {
  asio::io_context ctx(1);
  auto t = [&]() -> coral::task<bool> {
    asio::any_io_executor a = co_await asio::this_coro::executor;
    asio::any_io_executor b = co_await coral::this_task::executor;
    co_return a == asio::any_io_executor(ctx.get_executor()) && a == b;
  };
  auto j = coral::spawn(ctx, t());
  ctx.run();
  BOOST_TEST(j.get_result());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(non_cancellable)

BOOST_AUTO_TEST_CASE(a_cancelled_task_can_still_await_cleanup_in_a_non_cancellable_scope) {
  coral::event_loop loop;
  auto cleanup = []() -> coral::task<int> {
    co_await 1ms;
    co_await coral::yield();
    co_return 7;
  };
  auto j = coral::spawn(loop.get_executor(), [&]() -> coral::task<std::string> {
    try {
      co_await 1h;
    } catch (const boost::system::system_error& e) {
      if (e.code() != asio::error::operation_aborted) co_return "sleep: " + e.code().message();
    }
    int v = co_await coral::non_cancellable(cleanup());
    try {
      co_await coral::yield();  // outside the scope the task is still cancelled
    } catch (const boost::system::system_error& e) {
      co_return "cleanup " + std::to_string(v) + ", then " + outcome_of(e);
    }
    co_return "cleanup " + std::to_string(v) + ", then completed";
  });
  j.cancel();
  BOOST_TEST(get_within(j) == "cleanup 7, then aborted");
}

BOOST_AUTO_TEST_SUITE_END()
