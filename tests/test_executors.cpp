#define BOOST_TEST_MODULE coral executors
#include <dirent.h>
#include <pthread.h>
#include <sched.h>

#include <boost/test/unit_test.hpp>
#include <mutex>
#include <random>
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

// Set by a task on the thread it runs on. (Not the thread's id: a thread that has ended leaves its
// id, and often its memory, to the next one created.)
namespace {
thread_local bool seen_by_a_task = false;
}  // namespace

namespace {

coral::task<void, coral::pool_executor> tick_forever_on_the_pool() {
  lifetime l;
  for (;;) co_await 1ms;
}

template <class Executor>
void cancel_reaches_a_pool_child(Executor ex, const char* kind, unsigned seed) {
  BOOST_TEST_CONTEXT("executor: " << kind) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> delay_us(0, 3000);
    for (int i = 0; i < 100; ++i) {
      auto j = coral::spawn(ex, []() -> coral::task<> {
        lifetime l;
        co_await tick_forever_on_the_pool();
      });
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));  // a random moment, not a wait
      std::thread canceller([&] { j.cancel(); });
      canceller.join();
      BOOST_TEST_REQUIRE(failure_of(j) == asio::error::operation_aborted, "iteration " << i);
    }
    BOOST_TEST(lifetime::alive == 0);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(loop_executor)

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

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pool_executor)

BOOST_AUTO_TEST_CASE(pool_tasks_run_on_pool_threads) {
  auto t = []() -> coral::task<bool, coral::pool_executor> {
    co_await 1ms;
    co_return coral::pool_executor{}.running_in_this_thread();
  };
  BOOST_TEST(get_within(coral::spawn(t())));
}

// Cancellation across executors: the parent's cancellation reaches a child on another executor
// through that executor (no slot touched from two threads).
BOOST_AUTO_TEST_CASE(cancelling_a_task_whose_child_runs_on_the_pool_reaches_the_child) {
  {
    running_io_context ctx(1);
    cancel_reaches_a_pool_child(ctx.get_executor(), "io_context, 1 thread", 1);
  }
  {
    running_io_context ctx(2);
    cancel_reaches_a_pool_child(ctx.get_executor(), "io_context, 2 threads", 2);
  }
  {
    coral::event_loop loop;
    cancel_reaches_a_pool_child(loop.get_executor(), "event_loop", 3);
  }
  cancel_reaches_a_pool_child(coral::loop_executor{}, "loop_executor", 4);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(new_thread_executor)

BOOST_AUTO_TEST_CASE(new_thread_tasks_get_a_new_thread_per_resumption) {
  auto t = []() -> coral::task<bool, coral::new_thread_executor> {
    seen_by_a_task = true;
    co_await 1ms;
    co_return !seen_by_a_task;  // a new thread's thread_local starts afresh
  };
  BOOST_TEST(get_within(coral::spawn(t())));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(inline_executor)

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
  // The child finishes only once spawn() has returned, so no other thread is running the task
  // (if one were, the two would take turns: an inline task runs on a strand of its own).
  coral::event_loop other;
  coral::channel<int> go(1);
  auto t = [&]() -> coral::task<bool, coral::inline_executor> {
    co_await coral::on(other.get_executor(), [&]() -> coral::task<> { co_await go.receive(); }());
    co_return std::this_thread::get_id() == other.thread_id();
  };
  auto j = coral::spawn(t());
  BOOST_TEST(go.try_send(1));
  BOOST_TEST(get_within(j));
}

// The cancel of an inline task runs its cancellation (and the task) on the cancelling thread:
// nothing of coral's may be locked meanwhile, or it deadlocks.
BOOST_AUTO_TEST_CASE(cancelling_an_inline_task_runs_it_on_the_cancelling_thread_without_deadlock) {
  coral::channel<int> ch(0);
  auto waiting = coral::spawn(coral::inline_executor{}, [&]() -> coral::task<> { co_await ch.receive(); });
  waiting.cancel();
  BOOST_TEST(failure_of(waiting) == asio::error::operation_aborted);

  auto parent = coral::spawn(coral::inline_executor{}, []() -> coral::task<> {
    co_await coral::on(coral::loop_executor{}, []() -> coral::task<> { co_await 1h; }());
  });
  parent.cancel();  // forwarded to the child, whose segment shares the default loop's gate
  BOOST_TEST(failure_of(parent) == asio::error::operation_aborted);
}

// Every resumption of an inline task is posted; run on the spot, each would nest inside the
// previous one until the stack overflows.
BOOST_AUTO_TEST_CASE(an_inline_task_yields_and_passes_values_without_bound_on_the_stack) {
  constexpr int steps = 200'000;
  auto yielding = coral::spawn(coral::inline_executor{}, [&]() -> coral::task<int> {
    int n = 0;
    for (; n < steps; ++n) co_await coral::yield();
    co_return n;
  });
  BOOST_TEST(get_within(yielding) == steps);

  coral::channel<int> ping(0), pong(0);
  auto echo = coral::spawn(coral::inline_executor{}, [&]() -> coral::task<int> {
    int echoed = 0;
    while (auto v = co_await ping.next()) {
      co_await pong.send(*v);
      ++echoed;
    }
    co_return echoed;
  });
  auto player = coral::spawn(coral::inline_executor{}, [&]() -> coral::task<long> {
    long sum = 0;
    for (int i = 0; i < steps; ++i) {
      co_await ping.send(i);
      sum += co_await pong.receive();
    }
    ping.close();
    co_return sum;
  });
  BOOST_TEST(get_within(player) == long(steps) * (steps - 1) / 2);
  BOOST_TEST(get_within(echo) == steps);
}

// Posted inline work runs at once on a thread that runs none, and after the running work
// otherwise; a thread that blocks on a job inside such work first runs what it queued.
BOOST_AUTO_TEST_CASE(posted_inline_work_runs_at_once_or_right_after_the_work_that_posted_it) {
  std::vector<int> order;
  asio::post(coral::inline_executor{}, [&] {
    order.push_back(1);
    asio::post(coral::inline_executor{}, [&] { order.push_back(3); });
    order.push_back(2);
  });
  BOOST_TEST(order == (std::vector<int>{1, 2, 3}));

  auto outer = coral::spawn(coral::inline_executor{}, []() -> coral::task<int> {
    co_return coral::sync_wait(coral::inline_executor{}, []() -> coral::task<int> {
      co_await coral::yield();
      co_return 7;
    }());
  });
  BOOST_TEST(get_within(outer) == 7);

  // A task spawned on the waiting task's own executor runs in the waiter's strand: it cannot
  // start before the waiter returns, so the wait is refused rather than a deadlock.
  auto same_strand = coral::spawn(coral::inline_executor{}, []() -> coral::task<std::string> {
    asio::any_io_executor self = co_await coral::this_task::executor;
    auto inner = coral::spawn(self, []() -> coral::task<> { co_await coral::yield(); }());
    try {
      inner.wait_for(patience);
    } catch (const std::logic_error&) {
      co_return "refused";
    }
    co_return "waited";
  });
  BOOST_TEST(get_within(same_strand) == "refused");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(asio_executors)

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

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(event_loop)

BOOST_AUTO_TEST_CASE(several_threads_may_join_an_event_loop_at_once) {
  coral::event_loop loop;
  const auto id = loop.thread_id();
  std::atomic<int> returned{0};
  std::vector<std::thread> joiners;
  for (int i = 0; i < 4; ++i) {
    joiners.emplace_back([&] {
      loop.join();
      ++returned;
    });
  }
  loop.stop();
  for (auto& t : joiners) t.join();
  BOOST_TEST(returned == 4);
  BOOST_TEST((loop.thread_id() == id));  // still the loop thread's, after it ended
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

BOOST_AUTO_TEST_CASE(a_finished_job_leaves_nothing_running_so_its_event_loop_can_be_destroyed_at_once) {
  // "Done is done": once wait() returns, no thread still touches the task's state or context.
  for (int i = 0; i < 500; ++i) {
    coral::job<int> j;
    {
      coral::event_loop loop;
      j = coral::spawn(loop.get_executor(), []() -> coral::task<int> {
        co_return co_await []() -> coral::task<int, coral::pool_executor> { co_return 1; }();
      });
      BOOST_TEST_REQUIRE(j.wait_for(patience), "iteration " << i);
    }
    BOOST_TEST_REQUIRE(j.get_result() == 1);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(io_pool)

BOOST_AUTO_TEST_CASE(each_context_runs_on_a_thread_of_its_own_and_get_executor_takes_them_in_turn) {
  coral::io_pool pool(3);
  BOOST_TEST(pool.size() == 3u);
  std::set<std::thread::id> threads;
  for (std::size_t i = 0; i < 6; ++i) {
    auto ex = pool.get_executor();
    BOOST_TEST(&ex.context() == &pool.context(i % 3));
    auto j = coral::spawn(ex, [ex]() -> coral::task<std::thread::id> {
      co_await 1ms;
      BOOST_TEST(ex.running_in_this_thread());
      co_return std::this_thread::get_id();
    });
    const auto id = get_within(j);
    BOOST_TEST((id == pool.thread_id(i % 3)));
    threads.insert(id);
  }
  BOOST_TEST(threads.size() == 3u);
}

BOOST_AUTO_TEST_CASE(pinned_threads_each_run_on_one_cpu_of_the_process_in_turn) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  BOOST_TEST_REQUIRE(::sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  const std::size_t n = cpus.size() + 1;  // one more thread than CPUs: the last shares the first's
  coral::io_pool pool(n, coral::io_pool::pinning::one_cpu_per_thread);
  for (std::size_t i = 0; i < n; ++i) {
    auto j = coral::spawn(pool.context(i), []() -> coral::task<std::vector<int>> {
      cpu_set_t mine;
      CPU_ZERO(&mine);
      ::pthread_getaffinity_np(::pthread_self(), sizeof mine, &mine);
      std::vector<int> on;
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &mine)) on.push_back(cpu);
      }
      co_return on;
    });
    BOOST_TEST(get_within(j) == std::vector<int>{cpus[i % cpus.size()]}, "thread " << i);
  }
}

BOOST_AUTO_TEST_CASE(join_on_one_of_its_threads_throws_instead_of_waiting_forever) {
  coral::io_pool pool(2);
  auto j = coral::spawn(pool.get_executor(), [&]() -> coral::task<bool> {
    try {
      pool.join();
    } catch (const std::logic_error&) {
      co_return true;
    }
    co_return false;
  });
  BOOST_TEST(get_within(j));
}

BOOST_AUTO_TEST_CASE(destroying_it_frees_tasks_waiting_on_channels_fed_from_its_other_contexts) {
  // Senders and receivers on different contexts of the pool trade values until the pool is
  // destroyed at a random moment: every job ends, every value and frame is freed.
  std::mt19937 rng(11);
  for (int round = 0; round < 100; ++round) {
    std::vector<coral::job<int>> jobs;
    {
      coral::io_pool pool(3);
      auto ch = std::make_shared<coral::channel<lifetime>>(round % 3);
      for (int k = 0; k < 6; ++k) {
        jobs.push_back(coral::spawn(pool.get_executor(), [](auto ch, bool sender) -> coral::task<int> {
          lifetime frame;
          for (int n = 0;; ++n) {
            if (sender) {
              co_await ch->send(lifetime());
            } else {
              lifetime got = co_await ch->receive();
            }
            if (n == 1'000'000) co_return n;
          }
        }(ch, k % 2 == 0)));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));  // a random moment, not a wait
    }
    for (auto& j : jobs) {
      BOOST_TEST_CONTEXT("round " << round) {
        BOOST_TEST_REQUIRE(j.wait_for(patience));
        BOOST_TEST(failure_of(j) == asio::error::operation_aborted);
      }
    }
    BOOST_TEST_REQUIRE(lifetime::alive == 0, "round " << round);
  }
}

BOOST_AUTO_TEST_CASE(a_room_spread_over_its_contexts_ends_in_two_phases) {
  // A chat room's shape: members on different contexts pass values around a ring of channels.
  // Phase 1 sets `stopping` (a member waiting to receive ends); phase 2, at a random moment,
  // cancels the members still in a send. The join returns once every member ended; each value
  // sent was received or is still in a channel; nothing outlives the channels.
  std::mt19937 rng(5);
  for (int round = 0; round < 60; ++round) {
    constexpr int members = 9;
    std::vector<coral::channel<lifetime>> inboxes;
    for (int k = 0; k < members; ++k) inboxes.emplace_back(static_cast<std::size_t>(round % 3));
    std::atomic<long> sent{0}, received{0};
    std::set<const asio::io_context*> contexts;
    std::atomic<int> misplaced{0};
    coral::event stopping;
    auto member = [&](int k, coral::io_pool::executor_type ex) -> coral::task<> {
      lifetime frame;
      for (;;) {
        if (!ex.running_in_this_thread()) ++misplaced;
        auto got = co_await coral::when_any(inboxes[static_cast<std::size_t>(k)].receive(), stopping.wait());
        if (got.index() == 1) co_return;
        ++received;
        co_await inboxes[static_cast<std::size_t>((k + 1) % members)].send(lifetime());
        ++sent;
      }
    };
    {
      coral::io_pool pool(3);
      const auto delay = std::chrono::microseconds(rng() % 3000);
      auto room = coral::spawn(pool.context(0), [&]() -> coral::task<> {
        coral::task_group group(co_await coral::this_task::executor);
        for (int k = 0; k < members; ++k) {
          auto ex = pool.get_executor();
          contexts.insert(&ex.context());
          group.spawn(ex, member(k, ex));
        }
        for (int k = 0; k < members; k += 2) {
          co_await inboxes[static_cast<std::size_t>(k)].send(lifetime());
          ++sent;
        }
        co_await coral::sleep_for(delay);
        stopping.set();
        co_await coral::sleep_for(delay);
        group.cancel();
        co_await group.join();
      });
      BOOST_TEST_CONTEXT("round " << round) {
        BOOST_TEST_REQUIRE(room.wait_for(patience));
        BOOST_TEST(!failure_of(room));
      }
    }
    BOOST_TEST(contexts.size() == 3u);
    BOOST_TEST(misplaced == 0);  // each member ran on the context it was spawned on
    long queued = 0;
    for (auto& inbox : inboxes) queued += static_cast<long>(inbox.size());
    BOOST_TEST(sent.load() == received.load() + queued, "round " << round);
    inboxes.clear();
    BOOST_TEST_REQUIRE(lifetime::alive == 0, "round " << round);
  }
}

BOOST_AUTO_TEST_CASE(a_thread_given_the_id_of_an_ended_pool_thread_is_not_taken_for_one) {
  // Thread ids are reused once a thread has been joined: a new thread often gets the id of the
  // pool thread that ended just before, and must still be able to join and destroy the pool.
  for (int round = 0; round < 20; ++round) {
    auto pool = std::make_unique<coral::io_pool>(1);
    const auto ended = pool->thread_id(0);
    pool->stop();
    pool->join();
    bool joined = false, same_id = false;
    std::thread other([&] {
      same_id = std::this_thread::get_id() == ended;
      pool->join();
      joined = true;
      pool.reset();
    });
    other.join();
    BOOST_TEST(joined, "round " << round << (same_id ? " (the new thread had the ended thread's id)" : ""));
    BOOST_TEST(!pool);
  }
}

BOOST_AUTO_TEST_CASE(a_cancelled_task_whose_pool_goes_reports_no_failure) {
  // A job cancelled just before its pool goes: its children on the other contexts end with
  // operation_aborted, the cancellation forwarded to them, which is no failure to report.
  std::atomic<int> reported{0};
  auto previous = coral::set_unobserved_exception_handler([&](std::exception_ptr) { ++reported; });
  for (int round = 0; round < 200; ++round) {
    auto pool = std::make_unique<coral::io_pool>(2);
    coral::channel<int> never(0);
    std::atomic<int> started{0};
    auto child = [&]() -> coral::task<int> {
      ++started;
      co_return co_await never.receive();
    };
    auto other = pool->context(1).get_executor();
    auto job = coral::spawn(pool->context(0).get_executor(), [&]() -> coral::task<> {
      co_await coral::when_all(coral::on(other, child()), coral::on(other, child()));
    });
    const auto give_up = std::chrono::steady_clock::now() + patience;
    while (started.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    BOOST_REQUIRE(started.load() == 2);
    job.cancel();
    pool.reset();
    BOOST_TEST(job.done());
  }
  coral::set_unobserved_exception_handler(std::move(previous));
  BOOST_TEST(reported.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
