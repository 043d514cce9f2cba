#define BOOST_TEST_MODULE coral spawn and job
#include <unistd.h>

#include <algorithm>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace coral_test;
namespace asio = boost::asio;

#include "allocation_counter.hpp"

namespace {

coral::task<int> answer() {
  co_await coral::yield();
  co_return 42;
}

coral::task<int> failing() {
  co_await coral::yield();
  throw std::runtime_error("boom");
  co_return 0;
}

}  // namespace

namespace {
// Frames of the awaiting task, counted apart from its child's.
struct parent_lifetime {
  static inline std::atomic<int> alive{0};
  parent_lifetime() { ++alive; }
  ~parent_lifetime() { --alive; }
};
// Tells when the frame holding it is destroyed.
struct on_destroy {
  std::promise<void>* destroyed;
  ~on_destroy() { destroyed->set_value(); }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(spawn)

BOOST_AUTO_TEST_CASE(a_spawned_lambda_keeps_its_captures_alive) {
  coral::event_loop loop;
  coral::job<std::string> j;
  {
    std::string text = "captured";
    j = coral::spawn(loop.get_executor(), [text]() -> coral::task<std::string> {
      co_await 10ms;
      co_return text + " still alive";
    });
  }
  BOOST_TEST(get_within(j) == "captured still alive");
}

// ... until the task ends, as asio::co_spawn's: a job handle kept afterwards does not keep them (a
// captured subscriber would hold back a broadcast channel's senders, a captured guard its lock).
CORAL_TEST_CASE_ON_EACH_PLACE(a_spawned_lambdas_captures_go_when_its_task_ends_not_with_its_job, every_place) {
  auto captured = std::make_shared<int>(7);
  const std::weak_ptr<int> watch = captured;
  auto j = coral::spawn(place.get_executor(), [captured = std::move(captured)]() -> coral::task<int> {
    co_await coral::yield();
    co_return *captured;
  });
  BOOST_TEST(get_within(j) == 7);
  BOOST_TEST(watch.expired(), "the job handle kept the lambda's captures");
  BOOST_TEST(j.done());
}

BOOST_AUTO_TEST_CASE(a_spawned_lambdas_captures_go_with_its_task_when_its_context_is_destroyed) {
  coral::job<> j;
  std::weak_ptr<int> watch;
  {
    asio::io_context ctx(1);
    auto captured = std::make_shared<int>(7);
    watch = captured;
    j = coral::spawn(ctx, [captured = std::move(captured)]() -> coral::task<> { co_await std::chrono::hours(1); });
    ctx.poll();
    BOOST_TEST(!watch.expired());
  }
  BOOST_TEST(watch.expired(), "the job handle kept the lambda's captures");
  BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(completion_tokens_receive_the_outcome) {
  coral::event_loop loop;
  auto ex = loop.get_executor();

  std::future<int> f = coral::spawn(ex, answer(), asio::use_future);
  BOOST_TEST(f.get() == 42);

  std::promise<std::string> p;
  coral::spawn(ex, failing(), [&](std::exception_ptr e, int) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      p.set_value(ex.what());
    }
  });
  BOOST_TEST(p.get_future().get() == "boom");

  auto from_awaitable = asio::co_spawn(
      ex, [&]() -> asio::awaitable<int> { co_return co_await coral::spawn(ex, answer(), asio::use_awaitable); },
      asio::use_future);
  BOOST_TEST(from_awaitable.get() == 42);

  auto from_task = [&]() -> coral::task<int> { co_return co_await coral::spawn(ex, answer(), coral::use_task) + 1; };
  BOOST_TEST(get_within(coral::spawn(ex, from_task())) == 43);
}

BOOST_AUTO_TEST_CASE(spawn_with_a_token_keeps_the_handler_in_its_associated_allocator) {
  allocation_counts counts;
  coral_test::counting_allocator<void> allocator(counts);
  {
    asio::io_context ctx(1);
    int result = 0;
    coral::spawn(ctx, answer(), asio::bind_allocator(allocator, [&](std::exception_ptr e, int v) {
                   if (!e) result = v;
                 }));
    ctx.run();
    BOOST_TEST(result == 42);
    BOOST_TEST(counts.allocations >= 1);
    BOOST_TEST(counts.allocations == counts.deallocations);

    // On a pool, the completion is dispatched to the handler's executor with the same allocator.
    asio::thread_pool pool(2);
    std::promise<int> p;
    coral::spawn(pool, answer(), asio::bind_allocator(allocator, [&](std::exception_ptr, int v) { p.set_value(v); }));
    auto f = p.get_future();
    BOOST_REQUIRE(f.wait_for(patience) == std::future_status::ready);
    BOOST_TEST(f.get() == 42);
    pool.join();
    BOOST_TEST(counts.allocations >= 2);

    // A task its context never finishes: the handler goes with the job, through the allocator.
    coral::spawn(
        ctx,
        [&]() -> coral::task<int> {
          co_await coral::sleep_for(std::chrono::hours(1));
          co_return 1;
        },
        asio::bind_allocator(allocator, [](std::exception_ptr, int) {}));
  }
  BOOST_TEST(counts.allocations == counts.deallocations);
}

BOOST_AUTO_TEST_CASE(cancelling_a_sleeping_job_aborts_the_sleep) {
  coral::event_loop loop;
  auto j = coral::spawn(loop.get_executor(), []() -> coral::task<> { co_await 1h; });
  j.cancel();
  BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(destroying_an_io_context_with_suspended_tasks_frees_them) {
  coral::job<> j;
  {
    asio::io_context ctx;
    j = coral::spawn(ctx, []() -> coral::task<> {
      lifetime l;
      co_await []() -> coral::task<> {
        lifetime inner;
        co_await 1h;
      }();
    });
    coral::spawn(ctx, []() -> coral::task<> {
      lifetime l;
      co_await 1h;
    });
    ctx.run_for(20ms);
    BOOST_TEST(lifetime::alive == 3);
  }
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(j.done());
  BOOST_CHECK_THROW(j.get_result(), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(a_frame_is_not_destroyed_while_its_child_runs_elsewhere) {
  // The articles' ~Task destroyed frames still running on another thread. (On the process-wide
  // loop: the pool thread finishing the child posts to it, so it must outlive the test.)
  std::promise<int> result;
  {
    auto j = coral::spawn(coral::loop_executor{}, [&]() -> coral::task<> {
      lifetime l;
      int v = co_await []() -> coral::task<int, coral::pool_executor> {
        co_await 20ms;
        co_return 5;
      }();
      result.set_value(v);
    });
  }  // job dropped while the child sleeps on the pool
  auto f = result.get_future();
  BOOST_TEST((f.wait_for(patience) == std::future_status::ready));
  BOOST_TEST(f.get() == 5);
}

BOOST_AUTO_TEST_CASE(a_pool_task_releasing_its_own_last_reference_does_not_join_itself) {
  // The articles' AsyncExecutor future joined itself ("Resource deadlock avoided").
  std::promise<void> done;
  auto holder = std::make_shared<coral::job<>>();
  auto finished = done.get_future();
  // The frame holds the only job: it is released on a pool thread when the frame is destroyed.
  *holder = coral::spawn([]([[maybe_unused]] std::shared_ptr<coral::job<>> self,
                            std::promise<void>* done) -> coral::task<void, coral::pool_executor> {
    co_await 1ms;
    done->set_value();
  }(holder, &done));
  holder.reset();
  BOOST_TEST((finished.wait_for(patience) == std::future_status::ready));
}

BOOST_AUTO_TEST_CASE(io_context_run_waits_for_a_task_suspended_on_another_executor) {
  // As with asio::co_spawn, a running task is outstanding work on its executor.
  asio::io_context ctx;
  asio::thread_pool pool(1);  // declared after ctx: joined before ctx is destroyed
  auto j = coral::spawn(ctx, [&]() -> coral::task<int> { co_return co_await coral::on(pool, answer()); });
  ctx.run();
  BOOST_TEST(j.done());
  BOOST_TEST(j.get_result() == 42);
}

BOOST_AUTO_TEST_CASE(the_completion_handlers_cancellation_slot_cancels_the_task) {
  // As with asio::co_spawn: what parallel_group and friends rely on.
  asio::io_context ctx;
  asio::cancellation_signal signal;
  boost::system::error_code outcome;
  coral::spawn(
      ctx, []() -> coral::task<> { co_await 1h; },
      asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e) {
        try {
          if (e) std::rethrow_exception(e);
        } catch (const boost::system::system_error& error) {
          outcome = error.code();
        }
      }));
  asio::post(ctx, [&] { signal.emit(asio::cancellation_type::terminal); });
  ctx.run_for(patience);
  BOOST_TEST(outcome == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(a_callable_that_throws_before_making_its_task_throws_from_spawn_and_leaves_nothing_behind) {
  asio::io_context ctx;
  auto make = [l = lifetime{}]() -> coral::task<int> { throw std::runtime_error("no task today"); };
  BOOST_CHECK_THROW(coral::spawn(ctx, make), std::runtime_error);
  BOOST_TEST(lifetime::alive == 1);  // only `make` itself: spawn's copy of it is gone
  // Nothing is left counting as work on the context: run() returns.
  auto run = std::async(std::launch::async, [&] { return ctx.run(); });
  const bool returned = run.wait_for(patience) == std::future_status::ready;
  if (!returned) ctx.stop();
  BOOST_TEST(returned, "io_context::run() did not return: the failed spawn left work behind");
}

BOOST_AUTO_TEST_CASE(spawn_accepts_an_event_loop_directly) {
  coral::event_loop loop;
  auto j = coral::spawn(loop, []() -> coral::task<std::thread::id> {
    co_await 1ms;
    co_return std::this_thread::get_id();
  });
  BOOST_TEST((get_within(j) == loop.thread_id()));
}

BOOST_AUTO_TEST_CASE(a_completion_handlers_slot_is_only_used_on_its_executor_while_a_pool_task_completes) {
  // The handler (bound to ctx) and its cancellation signal live on ctx's thread; the task runs on
  // the pool and ends there, racing with emit() on ctx's thread.
  running_io_context ctx(1);
  std::mt19937 rng(4242);
  int aborted = 0, completed = 0;
  for (int i = 0; i < 1000; ++i) {
    auto signal = std::make_shared<asio::cancellation_signal>();
    auto outcome = std::make_shared<std::promise<std::string>>();
    const int yields = static_cast<int>(rng() % 3);
    const auto sleep = std::chrono::microseconds(rng() % 100);
    const auto emit_after = std::chrono::microseconds(rng() % 300);
    asio::post(ctx.get_executor(), [&, signal, outcome, yields, sleep, emit_after] {
      auto handler = [outcome](std::exception_ptr e, int v) {
        try {
          if (e) std::rethrow_exception(e);
          outcome->set_value(v == 1 ? "completed" : "wrong value");
        } catch (const boost::system::system_error& error) {
          outcome->set_value(outcome_of(error));
        } catch (...) {
          outcome->set_value("other exception");
        }
      };
      coral::spawn(
          coral::pool_executor{},
          [](int yields, std::chrono::microseconds sleep) -> coral::task<int> {
            for (int y = 0; y < yields; ++y) co_await coral::yield();
            co_await sleep;
            co_return 1;
          }(yields, sleep),
          asio::bind_cancellation_slot(signal->slot(), asio::bind_executor(ctx.get_executor(), std::move(handler))));
      auto timer = std::make_shared<asio::steady_timer>(ctx.get_executor(), emit_after);
      timer->async_wait(
          [signal, timer](boost::system::error_code) { signal->emit(asio::cancellation_type::terminal); });
    });
    auto f = outcome->get_future();
    BOOST_TEST_REQUIRE((f.wait_for(patience) == std::future_status::ready), "iteration " << i);
    const auto r = f.get();
    BOOST_TEST_REQUIRE((r == "completed" || r == "aborted"), "iteration " << i << ": " << r);
    (r == "completed" ? completed : aborted)++;
  }
  BOOST_TEST_MESSAGE("completed " << completed << ", aborted " << aborted);
}

// Shutdown: destroying a context frees the frames of tasks suspended on it, whatever they wait on.
BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_context_frees_tasks_waiting_on_a_timer_or_a_socket, Context,
                              owned_contexts) {
  using tcp = asio::ip::tcp;
  coral::job<> sleeper, reader;
  {
    Context ctx;
    tcp::acceptor acceptor(ctx.get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
    tcp::socket client(ctx.get_executor());
    client.connect(acceptor.local_endpoint());
    tcp::socket server = acceptor.accept();
    // The client end lives in the sleeper's frame: it goes away with the context, not before
    // (closing it earlier would complete the read with eof).
    sleeper = coral::spawn(ctx.get_executor(), [](tcp::socket) -> coral::task<> {
      lifetime l;
      co_await 1h;
    }(std::move(client)));
    reader = coral::spawn(ctx.get_executor(), [](tcp::socket s) -> coral::task<> {
      lifetime l;
      char byte;
      co_await s.async_read_some(asio::buffer(&byte, 1), coral::use_task);  // nobody writes
    }(std::move(server)));
    ctx.settle();
    BOOST_TEST(lifetime::alive == 2);
  }
  BOOST_TEST(lifetime::alive == 0);
  BOOST_TEST(failure_of(sleeper) == asio::error::operation_aborted);
  BOOST_TEST(failure_of(reader) == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(
    destroying_a_context_whose_task_awaits_a_pool_child_frees_the_task_and_the_child_leaves_it_alone, Context,
    owned_contexts) {
  coral::job<int> j;
  std::promise<void> child_started, child_destroyed;
  {
    Context ctx;
    j = coral::spawn(ctx.get_executor(), [&]() -> coral::task<int> {
      parent_lifetime p;
      co_return co_await
          [](std::promise<void>& started, std::promise<void>& destroyed) -> coral::task<int, coral::pool_executor> {
            on_destroy d{&destroyed};
            lifetime l;
            started.set_value();
            co_await 20ms;  // completes after the context is gone
            co_return 1;
          }(child_started, child_destroyed);
    });
    ctx.settle();
    BOOST_TEST_REQUIRE((child_started.get_future().wait_for(patience) == std::future_status::ready));
    BOOST_TEST(parent_lifetime::alive == 1);
  }
  BOOST_TEST(parent_lifetime::alive == 0);
  // The child's completion must not touch the dead context (ASan); the job fails.
  BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
  BOOST_TEST_REQUIRE((child_destroyed.get_future().wait_for(patience) == std::future_status::ready));
  BOOST_TEST(lifetime::alive == 0);
}

namespace {
// A child that sleeps a few short times on its own executor (`sleeps` may be empty), and counts
// how it ended.
struct short_sleeps_outcomes {
  static inline std::atomic<int> completed{0}, aborted{0};
};
// Counts the children's frames, for a test to wait until the last one is gone (without polling).
// A child takes one by value: the copy lives in its frame from the moment the parent makes it
// until the frame is destroyed. (A local of the child's body would not count a child whose
// executor has not run it yet: it starts, cancelled, after its parent's context is gone.)
class child_frame {
 public:
  child_frame() { add(); }
  child_frame(const child_frame&) { add(); }
  child_frame& operator=(const child_frame&) = default;
  ~child_frame() {
    std::lock_guard lock(mutex_);
    if (--alive_ == 0) none_left_.notify_all();
  }
  static int alive() {
    std::lock_guard lock(mutex_);
    return alive_;
  }
  // Waits until no child frame is left, at most `bound`; returns whether none is.
  static bool none_left_within(std::chrono::nanoseconds bound) {
    std::unique_lock lock(mutex_);
    return none_left_.wait_for(lock, bound, [] { return alive_ == 0; });
  }

 private:
  static void add() {
    std::lock_guard lock(mutex_);
    ++alive_;
  }
  static inline std::mutex mutex_;
  static inline std::condition_variable none_left_;
  static inline int alive_ = 0;
};
coral::task<> short_sleeps(child_frame, std::vector<std::chrono::microseconds> sleeps) {
  try {
    for (auto d : sleeps) co_await coral::sleep_for(d);
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) ++short_sleeps_outcomes::aborted;
    throw;
  }
  ++short_sleeps_outcomes::completed;
}
coral::task<void, coral::pool_executor> short_sleeps_on_pool(child_frame f,
                                                             std::vector<std::chrono::microseconds> sleeps) {
  co_await short_sleeps(f, std::move(sleeps));
}

// Multi-threaded executors a child can run on while its parent's context is destroyed. Those the
// test owns say how many threads run them.
struct child_on_io_context_4_threads {
  static constexpr int threads = 4;
  running_io_context context{threads};
  auto executor() { return context.get_executor(); }
  auto child(std::vector<std::chrono::microseconds> sleeps) {
    return coral::on(context.get_executor(), short_sleeps({}, std::move(sleeps)));
  }
};
struct child_on_thread_pool {
  static constexpr int threads = 4;
  asio::thread_pool pool{threads};
  auto executor() { return pool.get_executor(); }
  auto child(std::vector<std::chrono::microseconds> sleeps) {
    return coral::on(pool, short_sleeps({}, std::move(sleeps)));
  }
  ~child_on_thread_pool() { pool.join(); }
};
struct child_on_default_pool {
  auto child(std::vector<std::chrono::microseconds> sleeps) {
    return coral::on(coral::pool_executor{}, short_sleeps({}, std::move(sleeps)));
  }
};
struct child_bound_to_default_pool {
  auto child(std::vector<std::chrono::microseconds> sleeps) { return short_sleeps_on_pool({}, std::move(sleeps)); }
};
using multi_threaded_children =
    std::tuple<child_on_io_context_4_threads, child_on_thread_pool, child_on_default_pool, child_bound_to_default_pool>;
using owned_multi_threaded_children = std::tuple<child_on_io_context_4_threads, child_on_thread_pool>;

template <class Children>
coral::task<> await_short_sleeps(Children& children, std::vector<std::chrono::microseconds> sleeps) {
  co_await children.child(std::move(sleeps));
}

// Keeps every thread of an executor busy until release() (or until it goes): nothing else queued
// there runs meanwhile.
class occupied_threads {
 public:
  template <class Executor>
  occupied_threads(const Executor& executor, int threads) {
    std::latch busy(threads);
    for (int i = 0; i < threads; ++i) {
      asio::post(executor, [&busy, released = released_] {
        busy.count_down();
        released.wait();
      });
    }
    busy.wait();
  }
  occupied_threads(const occupied_threads&) = delete;
  occupied_threads& operator=(const occupied_threads&) = delete;
  ~occupied_threads() { release(); }
  void release() {
    if (!done_) release_.set_value();
    done_ = true;
  }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  bool done_ = false;
};
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(
    destroying_a_context_whose_unshared_task_awaits_a_child_on_a_multi_threaded_executor_cancels_the_child_only_there,
    Children, multi_threaded_children) {
  // Nothing but the shutdown can cancel a parent spawned with `detached` or whose job was dropped,
  // so its child hears no cancellation of the parent's. The shutdown still cancels the child: that
  // must reach the child through its own executor, one thing at a time, while the child's sleep
  // completes or the child ends on another of that executor's threads (ASan, TSan).
  Children children;
  std::mt19937 rng(20240611);
  // Bounded in time too: a sanitizer build on a loaded machine runs fewer iterations.
  // (CORAL_SHUTDOWN_ROUNDS=n runs n iterations, in up to n ms, to look for rare interleavings.)
  const long rounds = workload_size("CORAL_SHUTDOWN_ROUNDS", 1000);
  const auto stop = std::chrono::steady_clock::now() + std::max(1s, std::chrono::seconds(rounds / 1000));
  for (long i = 0; i < rounds && std::chrono::steady_clock::now() < stop; ++i) {
    std::vector<std::chrono::microseconds> sleeps(rng() % 8);
    for (auto& d : sleeps) d = std::chrono::microseconds(rng() % 200);
    asio::io_context ctx(1);
    if (i % 2 == 0) {
      coral::spawn(ctx, await_short_sleeps(children, std::move(sleeps)), asio::detached);
    } else {
      coral::spawn(ctx, await_short_sleeps(children, std::move(sleeps)));  // the job is dropped at once
    }
    ctx.run_for(std::chrono::microseconds(rng() % 400));
  }  // each context destroyed with its task waiting for the child, or just after it resumed
  // Every child ends (cancelled or done) and frees its frame, also one that its executor had not
  // started yet when its parent's context went.
  BOOST_TEST(child_frame::none_left_within(patience));
  BOOST_TEST_MESSAGE("children completed " << short_sleeps_outcomes::completed.exchange(0) << ", cancelled "
                                           << short_sleeps_outcomes::aborted.exchange(0));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(
    a_child_that_has_not_started_when_its_parents_context_is_destroyed_starts_cancelled_and_frees_its_frame, Children,
    owned_multi_threaded_children) {
  // What the test above meets by chance on a loaded machine, made certain: the child's executor is
  // busy while its parent's context is destroyed, so the child has not run yet. Once its executor
  // runs it, it is cancelled (its first sleep fails with operation_aborted) and its frame goes.
  Children children;
  short_sleeps_outcomes::completed = 0;
  short_sleeps_outcomes::aborted = 0;
  occupied_threads busy(children.executor(), Children::threads);
  {
    asio::io_context ctx(1);
    coral::spawn(ctx, await_short_sleeps(children, {1h}), asio::detached);
    ctx.poll();  // the parent runs and starts its child, which waits for a thread
    BOOST_TEST(child_frame::alive() == 1);
  }
  BOOST_TEST(child_frame::alive() == 1);  // not started: nothing of it has run yet
  busy.release();
  BOOST_TEST(child_frame::none_left_within(patience));
  BOOST_TEST(short_sleeps_outcomes::aborted.exchange(0) == 1);
  BOOST_TEST(short_sleeps_outcomes::completed.exchange(0) == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(job)

BOOST_AUTO_TEST_CASE(then_catching_finally_run_once_in_order_even_when_registered_late) {
  coral::event_loop loop;
  std::vector<std::string> events;
  std::mutex m;
  auto log = [&](std::string s) {
    std::lock_guard l(m);
    events.push_back(std::move(s));
  };
  auto ok = coral::spawn(loop.get_executor(), answer());
  ok.then([&](int v) { log("then " + std::to_string(v)); })
      .catching([&](std::exception&) { log("catching ok"); })
      .finally([&] { log("finally ok"); });
  ok.wait();
  auto bad = coral::spawn(loop.get_executor(), failing());
  bad.wait();
  bad.then([&](int) { log("then bad"); })
      .catching([&](std::exception& e) { log(std::string("catching ") + e.what()); })
      .finally([&] { log("finally bad"); });
  BOOST_TEST(events == (std::vector<std::string>{"then 42", "finally ok", "catching boom", "finally bad"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(get_result_returns_the_value_or_rethrows) {
  coral::event_loop loop;
  BOOST_TEST(get_within(coral::spawn(loop.get_executor(), answer())) == 42);
  BOOST_CHECK_THROW(get_within(coral::spawn(loop.get_executor(), failing())), std::runtime_error);
  auto mo = coral::spawn(loop.get_executor(),
                         []() -> coral::task<std::unique_ptr<int>> { co_return std::make_unique<int>(3); });
  BOOST_TEST(*get_within(mo) == 3);
  BOOST_CHECK_THROW(mo.get_result(), std::logic_error);  // a move-only result is taken once
}

BOOST_AUTO_TEST_CASE(many_threads_waiting_on_many_jobs_all_wake) {
  // The articles' get_result waited with `if` instead of a predicate.
  coral::event_loop loop;
  for (int round = 0; round < 50; ++round) {
    auto j = coral::spawn(loop.get_executor(), answer());
    std::vector<std::future<int>> waiters;
    for (int w = 0; w < 4; ++w)
      waiters.push_back(std::async(std::launch::async, [j]() mutable { return get_within(j); }));
    for (auto& w : waiters) BOOST_TEST(w.get() == 42);
  }
}

BOOST_AUTO_TEST_CASE(get_result_on_the_jobs_own_thread_throws_instead_of_deadlocking) {
  coral::event_loop loop;
  std::promise<std::string> message;
  auto slow = coral::spawn(loop.get_executor(), []() -> coral::task<int> {
    co_await 50ms;
    co_return 1;
  });
  asio::post(loop.get_executor(), [&] {
    try {
      slow.get_result();
      message.set_value("no exception");
    } catch (const std::logic_error& e) {
      message.set_value(e.what());
    }
  });
  BOOST_TEST(message.get_future().get().find("deadlock") != std::string::npos);
  BOOST_TEST(get_within(slow) == 1);
}

BOOST_AUTO_TEST_CASE(dropping_a_job_neither_cancels_nor_leaks_the_task) {
  coral::event_loop loop;
  std::promise<void> finished;
  coral::spawn(loop.get_executor(), [&]() -> coral::task<> {
    lifetime l;
    co_await 20ms;
    finished.set_value();
  });
  BOOST_TEST((finished.get_future().wait_for(patience) == std::future_status::ready));
  auto drain = coral::spawn(loop.get_executor(), []() -> coral::task<> { co_return; });
  get_within(drain);
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(a_wait_that_returned_holds_no_memory) {
  coral::event_loop loop;
  auto release = std::make_shared<coral::event>();
  auto j = coral::spawn(loop.get_executor(), [release]() -> coral::task<> { co_await release->wait(); });
  long before = 0;
  {
    allocation_counter counter;
    for (int i = 0; i < 10000; ++i) BOOST_TEST_REQUIRE(!j.wait_for(0ms));
    before = counter.count();
  }
  // One signal for the job's waiters, made by the first wait; nothing per call.
  BOOST_TEST(before <= 1);
  std::thread waker([&] { asio::post(loop.get_executor(), [release] { release->set(); }); });
  j.wait();
  waker.join();
  BOOST_TEST(j.done());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(unobserved)

// What a task that fails while nobody holds its job writes on stderr.
std::string stderr_of_a_dropped_failure() {
  stderr_capture capture;
  {
    asio::io_context ctx;
    coral::spawn(ctx, failing());  // job dropped at once
    ctx.run();
  }
  return capture.text();
}

BOOST_AUTO_TEST_CASE(an_exception_nobody_observes_is_reported_on_stderr) {
  const std::string text = stderr_of_a_dropped_failure();
  BOOST_TEST(text.find("nobody observed") != std::string::npos);
  BOOST_TEST(text.find("boom") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_task_spawned_detached_fails_silently_as_with_co_spawn) {
  // A server ending every connection's task with an exception (EOF) must not write a line each.
  std::string text;
  {
    stderr_capture capture;
    {
      asio::io_context ctx;
      for (int i = 0; i < 3; ++i) coral::spawn(ctx, failing(), asio::detached);
      ctx.run();
    }
    text = capture.text();
  }
  BOOST_TEST(text.empty(), text);
}

BOOST_AUTO_TEST_CASE(an_installed_handler_receives_unobserved_exceptions_instead_of_stderr) {
  auto seen = std::make_shared<std::vector<std::string>>();
  auto previous = coral::set_unobserved_exception_handler([seen](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      seen->push_back(ex.what());
    }
  });
  BOOST_TEST(!previous);  // the default
  std::string text = stderr_of_a_dropped_failure();
  BOOST_TEST(text.empty(), text);
  BOOST_REQUIRE(seen->size() == 1u);
  BOOST_TEST(seen->front().find("boom") != std::string::npos);

  // A handler that throws is reported on stderr; an empty one restores the default.
  auto mine = coral::set_unobserved_exception_handler([](std::exception_ptr) { throw std::runtime_error("oops"); });
  BOOST_TEST(static_cast<bool>(mine));
  text = stderr_of_a_dropped_failure();
  BOOST_TEST(text.find("handler threw: oops") != std::string::npos, text);
  coral::set_unobserved_exception_handler({});
  text = stderr_of_a_dropped_failure();
  BOOST_TEST(text.find("nobody observed") != std::string::npos, text);
  BOOST_TEST(seen->size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_cancelled_job_that_ends_with_operation_aborted_is_not_reported_as_unobserved) {
  std::string text;
  {
    stderr_capture capture;
    {
      coral::event_loop loop;
      auto j = coral::spawn(loop.get_executor(), []() -> coral::task<> { co_await 1h; });
      j.cancel();
      BOOST_TEST(j.wait_for(patience));
    }
    {
      // A failure other than the cancellation still is.
      coral::event_loop loop;
      auto j = coral::spawn(loop.get_executor(), []() -> coral::task<> {
        try {
          co_await 1h;
        } catch (const boost::system::system_error&) {
        }
        throw std::runtime_error("failed while cancelled");
      });
      j.cancel();
      BOOST_TEST(j.wait_for(patience));
    }
    text = capture.text();
  }
  BOOST_TEST(text.find("Operation canceled") == std::string::npos, text);
  BOOST_TEST(text.find("failed while cancelled") != std::string::npos, text);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sync_wait)

BOOST_AUTO_TEST_CASE(sync_wait_runs_inherit_and_bound_tasks) {
  BOOST_TEST(coral::sync_wait(answer()) == 42);
  auto bound = []() -> coral::task<bool, coral::pool_executor> {
    co_await 1ms;
    co_return coral::pool_executor{}.running_in_this_thread();
  };
  BOOST_TEST(coral::sync_wait(bound()));
  auto via_pool = []() -> coral::task<int> { co_return co_await coral::on(coral::pool_executor{}, answer()); };
  BOOST_TEST(coral::sync_wait(via_pool()) == 42);
}

BOOST_AUTO_TEST_SUITE_END()
