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
