#define BOOST_TEST_MODULE coral executors
#include <dirent.h>

#include <boost/test/unit_test.hpp>
#include <mutex>
#include <set>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

int process_thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

coral::task<std::thread::id, coral::loop_executor> on_loop(std::chrono::milliseconds d) {
  co_await d;
  co_return std::this_thread::get_id();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_thousand_loop_tasks_share_one_thread) {
  thread_of(coral::loop_executor{});  // the default loop exists before counting
  const int threads_before = process_thread_count();
  std::vector<coral::job<std::thread::id>> jobs;
  for (int i = 0; i < 1000; ++i) jobs.push_back(coral::spawn(on_loop(std::chrono::milliseconds(i % 20))));
  BOOST_TEST(process_thread_count() <= threads_before + 1);
  std::set<std::thread::id> ids;
  for (auto& j : jobs) ids.insert(get_within(j));
  BOOST_TEST(ids.size() == 1u);
  BOOST_TEST((*ids.begin() == thread_of(coral::loop_executor{})));
}

BOOST_AUTO_TEST_CASE(pool_tasks_run_on_pool_threads) {
  auto t = []() -> coral::task<bool, coral::pool_executor> {
    co_await 1ms;
    co_return coral::pool_executor{}.running_in_this_thread();
  };
  BOOST_TEST(get_within(coral::spawn(t())));
}

BOOST_AUTO_TEST_CASE(new_thread_tasks_get_a_new_thread_per_resumption) {
  auto t = []() -> coral::task<bool, coral::new_thread_executor> {
    auto first = std::this_thread::get_id();
    co_await 1ms;
    co_return first != std::this_thread::get_id();
  };
  BOOST_TEST(get_within(coral::spawn(t())));
}

BOOST_AUTO_TEST_CASE(an_inline_task_awaiting_a_task_on_another_thread_does_not_deadlock) {
  // The articles' NoopExecutor deadlocked here: the child completed under the promise's lock.
  auto child = []() -> coral::task<int, coral::pool_executor> {
    co_await 1ms;
    co_return 7;
  };
  auto parent = [&]() -> coral::task<int, coral::inline_executor> {
    int v = co_await child();
    co_return v + 1;
  };
  BOOST_TEST(get_within(coral::spawn(parent())) == 8);
}

BOOST_AUTO_TEST_CASE(an_inline_task_continues_on_the_thread_that_resumes_it) {
  coral::event_loop other;
  auto t = [&]() -> coral::task<bool, coral::inline_executor> {
    co_await coral::on(other.get_executor(), []() -> coral::task<> { co_return; }());
    co_return std::this_thread::get_id() == other.thread_id();
  };
  BOOST_TEST(get_within(coral::spawn(t())));
}

BOOST_AUTO_TEST_CASE(a_strand_task_stays_on_its_strand_across_suspensions) {
  asio::thread_pool pool(2);
  auto strand = asio::make_strand(pool.get_executor());
  auto t = [&]() -> coral::task<int> {
    int on_strand = strand.running_in_this_thread();
    co_await 1ms;
    on_strand += strand.running_in_this_thread();
    co_await coral::yield();
    on_strand += strand.running_in_this_thread();
    asio::steady_timer timer(strand, 1ms);
    co_await timer.async_wait(coral::use_task);
    on_strand += strand.running_in_this_thread();
    co_return on_strand;
  };
  BOOST_TEST(get_within(coral::spawn(strand, t())) == 4);
}

BOOST_AUTO_TEST_CASE(any_io_executor_works_as_a_runtime_executor) {
  coral::event_loop loop;
  asio::any_io_executor ex = loop.get_executor();
  auto t = [&]() -> coral::task<bool> {
    co_await 1ms;
    co_return std::this_thread::get_id() == loop.thread_id();
  };
  BOOST_TEST(get_within(coral::spawn(ex, t())));
}

BOOST_AUTO_TEST_CASE(an_event_loop_cannot_join_itself) {
  coral::event_loop loop;
  std::promise<bool> threw;
  asio::post(loop.get_executor(), [&] {
    try {
      loop.join();
      threw.set_value(false);
    } catch (const std::logic_error&) {
      threw.set_value(true);
    }
  });
  BOOST_TEST(threw.get_future().get());
  loop.stop();
  loop.join();
}
