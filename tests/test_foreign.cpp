#define BOOST_TEST_MODULE coral awaiter as_awaiter and foreign awaitables
#include <boost/test/unit_test.hpp>
#include <coroutine>
#include <future>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

// An awaitable that knows nothing of executors: it hands its coroutine to a foreign thread,
// which resumes it there.
struct resume_on_a_thread {
  std::promise<std::coroutine_handle<>>* mailbox;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const { mailbox->set_value(h); }
  int await_resume() const noexcept { return 11; }
};

// The articles' generic awaiter: completed by a foreign thread.
struct delayed_value : coral::awaiter<int> {
  std::promise<delayed_value*>* mailbox;
  bool fail;
  delayed_value(std::promise<delayed_value*>* m, bool f) : mailbox(m), fail(f) {}
  void after_suspend() override { mailbox->set_value(this); }
  void complete() {
    if (fail) {
      // Made in its own statement: the temporary runtime_error shares its (reference-counted)
      // message with the thrown copy, and must be gone before the task can run.
      auto error = std::make_exception_ptr(std::runtime_error("awaiter failed"));
      resume_exception(std::move(error));
    } else {
      resume(21);
    }
  }
  void before_resume() override { before_resume_thread = std::this_thread::get_id(); }
  std::thread::id before_resume_thread;
};

}  // namespace

namespace {

// Parks the task until someone calls complete(v); tells `suspended` when it has.
struct parked_value : coral::awaiter<int> {
  std::promise<void> suspended;
  void after_suspend() override { suspended.set_value(); }
  void complete(int v) { resume(v); }
};

struct item_with_lifetime : lifetime {
  int value;
  explicit item_with_lifetime(int v) : value(v) {}
};

// A foreign awaitable that declines to suspend (bool await_suspend returning false).
struct declines_to_suspend {
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<>) const noexcept { return false; }
  int await_resume() const noexcept { return 1; }
};

// A foreign awaitable that resumes the coroutine at once by returning its handle.
struct resumes_at_once {
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) const noexcept { return h; }
  int await_resume() const noexcept { return 1; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(awaiter)

BOOST_AUTO_TEST_CASE(a_generic_awaiter_resumed_from_another_thread_continues_on_the_executor) {
  coral::event_loop loop;
  std::promise<delayed_value*> m1, m2;
  std::thread completer([&] {
    m1.get_future().get()->complete();
    m2.get_future().get()->complete();
  });
  auto t = [&]() -> coral::task<std::string> {
    delayed_value ok(&m1, false);
    int v = co_await ok;
    bool home = std::this_thread::get_id() == loop.thread_id() && ok.before_resume_thread == loop.thread_id();
    try {
      co_await delayed_value(&m2, true);
    } catch (const std::runtime_error& e) {
      co_return std::to_string(v) + (home ? " home " : " away ") + e.what();
    }
    co_return "no exception";
  };
  BOOST_TEST(get_within(coral::spawn(loop.get_executor(), t())) == "21 home awaiter failed");
  completer.join();
}

BOOST_AUTO_TEST_CASE(an_awaiter_completed_after_its_task_was_cancelled_fails_with_operation_aborted) {
  coral::event_loop loop;
  running_io_context two_threads(2);
  auto check = [](auto ex, const char* kind) {
    BOOST_TEST_CONTEXT("executor: " << kind) {
      parked_value a;
      auto j = coral::spawn(ex, [&]() -> coral::task<int> { co_return co_await a; });
      BOOST_TEST_REQUIRE((a.suspended.get_future().wait_for(patience) == std::future_status::ready));
      j.cancel();
      a.complete(5);  // checked after resuming: the value is not handed to a cancelled task
      BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
    }
  };
  check(loop.get_executor(), "event_loop");
  check(two_threads.get_executor(), "io_context, 2 threads");
  check(coral::pool_executor{}, "pool_executor");
}

// Completed before the await: the work was started before the task awaited it.
struct counted_value : coral::awaiter<item_with_lifetime> {
  std::atomic<int> started{0};
  void after_suspend() override { ++started; }
};

BOOST_AUTO_TEST_CASE(a_resume_that_comes_before_the_await_is_kept_and_the_await_takes_it_at_once) {
  coral::event_loop loop;
  running_io_context two_threads(2);
  asio::thread_pool pool(2);
  auto check = [](auto ex, const char* kind) {
    BOOST_TEST_CONTEXT("executor: " << kind) {
      counted_value early;
      std::thread([&] { early.resume(item_with_lifetime(7)); }).join();
      auto j = coral::spawn(ex, [&]() -> coral::task<int> {
        item_with_lifetime v = co_await early;
        co_return v.value;
      });
      BOOST_TEST(get_within(j) == 7);
      BOOST_TEST(early.started == 0);  // nothing to start: the value was there
    }
  };
  check(loop.get_executor(), "event_loop");
  check(two_threads.get_executor(), "io_context, 2 threads");
  check(asio::make_strand(pool), "strand on a thread_pool");
  check(coral::pool_executor{}, "pool_executor");
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(resuming_an_awaiter_whose_await_failed_or_never_began_keeps_the_value_and_touches_nothing) {
  {
    counted_value never_awaited;
    asio::io_context ctx(1);
    auto j = coral::spawn(ctx, [&]() -> coral::task<int> {
      item_with_lifetime v = co_await never_awaited;
      co_return v.value;
    });
    j.cancel();  // before the task runs: its await fails at once
    ctx.run();
    BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
    BOOST_TEST(never_awaited.started == 0);
    never_awaited.resume(item_with_lifetime(1));
    BOOST_TEST(lifetime::alive == 1);  // kept in the awaiter
  }
  BOOST_TEST(lifetime::alive == 0);
  {
    counted_value never_awaited;
    coral::job<int> j;
    {
      asio::io_context ctx(1);
      j = coral::spawn(ctx, [&]() -> coral::task<int> {
        item_with_lifetime v = co_await never_awaited;
        co_return v.value;
      });
    }  // destroyed before the task ran
    never_awaited.resume(item_with_lifetime(2));
    BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  }
  BOOST_TEST(lifetime::alive == 0);
}

// Shutdown: an awaiter<R> living outside the task keeps nothing of a destroyed context alive.
BOOST_AUTO_TEST_CASE_TEMPLATE(
    an_awaiter_outliving_its_destroyed_context_frees_the_task_at_once_and_a_later_resume_touches_nothing, Context,
    owned_contexts) {
  auto outside = std::make_unique<parked_value>();
  coral::job<int> j;
  {
    Context ctx;
    j = coral::spawn(ctx.get_executor(), [&]() -> coral::task<int> {
      lifetime l;
      co_return co_await *outside;
    });
    ctx.settle();
    BOOST_TEST_REQUIRE((outside->suspended.get_future().wait_for(patience) == std::future_status::ready));
    BOOST_TEST(lifetime::alive == 1);
  }
  BOOST_TEST(lifetime::alive == 0);  // the frame went with its context
  outside->complete(5);              // must neither crash nor post to the dead context
  BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(as_awaiter)

BOOST_AUTO_TEST_CASE(a_future_is_awaited_without_blocking_and_resumes_on_the_executor) {
  coral::event_loop loop;
  std::promise<int> promise;
  std::atomic<bool> other_ran{false};
  auto t = [&]() -> coral::task<bool> {
    int v = co_await coral::as_awaiter(promise.get_future());
    co_return v == 5 && other_ran&& std::this_thread::get_id() == loop.thread_id();
  };
  auto j = coral::spawn(loop.get_executor(), t());
  // The loop stays free while the task waits for the future.
  get_within(coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    other_ran = true;
    co_return;
  }));
  std::thread setter([&] { promise.set_value(5); });
  BOOST_TEST(get_within(j));
  setter.join();
}

BOOST_AUTO_TEST_CASE(cancelling_a_task_waiting_on_a_future_always_ends_it_with_operation_aborted) {
  // The future's poll timer re-armed itself after a cancellation that landed between two polls.
  coral::event_loop loop;
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> delay_us(0, 2000);
  for (int i = 0; i < 200; ++i) {
    std::promise<int> never;
    auto j = coral::spawn(loop.get_executor(), [f = never.get_future()]() mutable -> coral::task<int> {
      co_return co_await coral::as_awaiter(std::move(f));
    });
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));  // a random moment, not a wait
    j.cancel();
    const bool ended = j.wait_for(patience);
    BOOST_TEST_REQUIRE(ended, "iteration " << i << ": the cancelled task still waits on its future");
    BOOST_TEST_REQUIRE(failure_of(j) == asio::error::operation_aborted, "iteration " << i);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(foreign_awaitable)

BOOST_AUTO_TEST_CASE(a_foreign_awaitable_resuming_on_its_own_thread_is_brought_back) {
  coral::event_loop loop;
  std::promise<std::coroutine_handle<>> mailbox;
  std::thread foreign([&] { mailbox.get_future().get().resume(); });
  auto t = [&]() -> coral::task<bool> {
    int v = co_await resume_on_a_thread{&mailbox};
    co_return v == 11 && std::this_thread::get_id() == loop.thread_id();
  };
  BOOST_TEST(get_within(coral::spawn(loop.get_executor(), t())));
  foreign.join();
}

BOOST_AUTO_TEST_CASE(a_foreign_awaitable_resumed_after_its_task_was_cancelled_fails_with_operation_aborted) {
  coral::event_loop loop;
  std::promise<std::coroutine_handle<>> mailbox;
  auto j =
      coral::spawn(loop.get_executor(), [&]() -> coral::task<int> { co_return co_await resume_on_a_thread{&mailbox}; });
  auto handle = mailbox.get_future();
  BOOST_TEST_REQUIRE((handle.wait_for(patience) == std::future_status::ready));
  j.cancel();
  handle.get().resume();  // from this (foreign) thread, as the awaitable would
  BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
}

// The sum of a million awaits of `Awaitable` (each yields 1) in one task.
template <class Awaitable>
long sum_of_a_million_awaits() {
  asio::io_context ctx(1);
  auto j = coral::spawn(ctx, []() -> coral::task<long> {
    long sum = 0;
    for (int i = 0; i < 1'000'000; ++i) sum += co_await Awaitable{};
    co_return sum;
  });
  ctx.run();
  return j.get_result();
}

BOOST_AUTO_TEST_CASE(a_million_foreign_awaits_that_decline_to_suspend_keep_the_stack_flat) {
  BOOST_TEST(sum_of_a_million_awaits<declines_to_suspend>() == 1'000'000);
}

BOOST_AUTO_TEST_CASE(a_million_foreign_awaits_that_resume_by_returning_the_handle_keep_the_stack_flat) {
  BOOST_TEST(sum_of_a_million_awaits<resumes_at_once>() == 1'000'000);
}

// Level-triggered cancellation holds for awaitables that are ready at once too: a ready future
// or a ready foreign awaitable must not let a cancelled task through.
BOOST_AUTO_TEST_CASE(a_cancelled_task_fails_even_on_awaitables_that_are_ready_at_once) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::string> {
    try {
      co_await 1h;
    } catch (const boost::system::system_error&) {
    }
    std::string outcomes;
    std::promise<int> p;
    p.set_value(1);
    try {
      co_await coral::as_awaiter(p.get_future());
      outcomes += "future completed;";
    } catch (const boost::system::system_error& e) {
      outcomes += "future " + outcome_of(e) + ";";
    }
    try {
      co_await std::suspend_never{};
      outcomes += "ready foreign completed";
    } catch (const boost::system::system_error& e) {
      outcomes += "ready foreign " + outcome_of(e);
    }
    co_return outcomes;
  });
  j.cancel();
  BOOST_TEST(get_within(j) == "future aborted;ready foreign aborted");
}

BOOST_AUTO_TEST_SUITE_END()
