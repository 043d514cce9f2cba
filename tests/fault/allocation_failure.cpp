#define BOOST_TEST_MODULE coral allocation failure
// Makes the k-th allocation fail, for every k along each way of starting and joining tasks, on a
// single-threaded io_context (Boost 1.81's own strand creation cannot survive a failed allocation,
// so no strand is involved there), along a spawn onto a thread_pool (a strand of the pool), and,
// from Boost 1.89 on, along joins whose children start on a pool (a strand each).
// The allocations counted include std::aligned_alloc's, from which Asio's recycling allocator
// takes its handlers' memory. Whatever k, the exception reaches someone (the caller, the job, the
// handler or the awaiting task), io_context::run() returns (no outstanding work is left behind)
// and every object the tasks held is destroyed (no frame is left behind); LeakSanitizer checks
// the rest. At the end, wakes from another thread, on strands too, must not allocate at all.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/version.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "../test_support.hpp"
#include "failing_allocation.hpp"

using namespace coral_test;
namespace asio = boost::asio;

namespace {

// Starts a scenario's tasks on `ctx`; the scenario ends when ctx.run() returns.
using scenario = std::function<void(asio::io_context& ctx)>;

coral::task<int> leaf(int v) {
  lifetime l;
  co_await coral::yield();
  co_return v;
}

coral::task<int> sleeper(int v) {
  lifetime l;
  co_await coral::sleep_for(1ms);
  co_return v;
}

coral::task<int> parent() {
  lifetime l;
  int a = co_await leaf(1);
  int b = co_await sleeper(2);
  co_return a + b;
}

struct outcome {
  long allocations = 0;  // counted along the run
  bool failed = false;   // the chosen allocation was reached
  bool stopped = false;  // run() returned: nothing outstanding
  int alive = 0;         // payloads alive once run() returned
};

// Runs `s` with the k-th allocation failing. run() is called again after each exception that
// leaves it (a handler's, as Asio lets them), at most a few times, each time for a bounded while.
outcome run_with_failure(const scenario& s, long k, bool aligned_too) {
  outcome o;
  lifetime::alive = 0;
  {
    asio::io_context ctx(1);
    fail_allocation_at(k, aligned_too);
    try {
      s(ctx);
    } catch (const std::bad_alloc&) {
    }
    for (int attempt = 0; attempt < 8 && !ctx.stopped(); ++attempt) {
      try {
        ctx.run_for(2s);
      } catch (const std::bad_alloc&) {
      }
    }
    o.failed = allocation_failed();
    o.allocations = stop_failing_allocations();
    o.stopped = ctx.stopped();
    o.alive = lifetime::alive.load();
  }
  return o;
}

// Every k from 0 to the number of allocations a run without a failure makes (Asio's recycled
// ones too, unless `aligned_too` is false).
void check_every_allocation(const char* name, const scenario& s, bool aligned_too = true) {
  const outcome clean = run_with_failure(s, -1, aligned_too);
  BOOST_TEST_REQUIRE(clean.stopped, name << ": the run without a failure did not end");
  BOOST_TEST_REQUIRE(clean.alive == 0, name);
  BOOST_TEST_MESSAGE(name << ": " << clean.allocations << " allocations");
  for (long k = 0; k <= clean.allocations; ++k) {
    const outcome o = run_with_failure(s, k, aligned_too);
    BOOST_TEST(o.stopped, name << ", allocation " << k << ": run() did not return");
    BOOST_TEST(o.alive == 0, name << ", allocation " << k << ": " << o.alive << " objects left alive");
  }
}

struct quiet_unobserved {
  coral::unobserved_exception_handler previous = coral::set_unobserved_exception_handler([](std::exception_ptr) {});
  ~quiet_unobserved() { coral::set_unobserved_exception_handler(previous); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(spawn_with_an_allocation_failing)

BOOST_AUTO_TEST_CASE(with_a_job) {
  quiet_unobserved quiet;
  check_every_allocation("spawn, job kept", [](asio::io_context& ctx) {
    auto j = coral::spawn(ctx, parent());
    j.then([](int) {});
  });
  check_every_allocation("spawn, job dropped", [](asio::io_context& ctx) { coral::spawn(ctx, parent()); });
  check_every_allocation("spawn of a lambda", [](asio::io_context& ctx) {
    coral::spawn(ctx, [l = lifetime()]() -> coral::task<int> { co_return co_await parent(); });
  });
}

BOOST_AUTO_TEST_CASE(with_a_completion_handler) {
  quiet_unobserved quiet;
  check_every_allocation("spawn, handler", [](asio::io_context& ctx) {
    coral::spawn(ctx, parent(), [l = lifetime()](std::exception_ptr, int) {});
  });
  check_every_allocation("spawn, detached", [](asio::io_context& ctx) { coral::spawn(ctx, parent(), asio::detached); });
}

// A stateful allocator too large for any_io_executor's inline storage: an io_context executor that
// carries it is kept on the heap, as a strand is, and Asio's prefer() and dispatch() copy it there.
template <class T>
struct padded_allocator {
  using value_type = T;
  padded_allocator() = default;
  template <class U>
  padded_allocator(const padded_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  template <class U>
  friend bool operator==(const padded_allocator&, const padded_allocator<U>&) noexcept {
    return true;
  }
  void* padding[3] = {};
};

// A handler whose executor is type-erased and kept on the heap: keeping its outstanding work and
// dispatching the completion to it allocate, and a completion that cannot be dispatched lets go
// of the handler and its work unrun. (A strand would do the same, but Asio's strand may fail to
// schedule itself after queuing the completion, which then waits for ever: not coral's to cover.)
BOOST_AUTO_TEST_CASE(with_a_completion_handler_on_a_heap_executor) {
  quiet_unobserved quiet;
  check_every_allocation("spawn, handler on a heap executor", [](asio::io_context& ctx) {
    const auto executor = [&] {
      uncounted_allocations uncounted;
      return asio::any_io_executor(
          asio::require(ctx.get_executor(), asio::execution::allocator(padded_allocator<void>())));
    }();
    coral::spawn(ctx, parent(), asio::bind_executor(executor, [l = lifetime()](std::exception_ptr, int) {}));
  });
}

// Spawns onto `executor` (of a context run by other threads) with the spawning thread's k-th
// allocation failing, for every k; the task starts on a strand of its own, whose first post also
// posts the strand's runner after the task's start is queued.
template <class Executor>
void check_spawn_onto(const char* name, const Executor& executor) {
  for (int how = 0; how < 3; ++how) {
    for (long k = 0;; ++k) {
      lifetime::alive = 0;
      fail_allocation_at(k);
      try {
        if (how == 0) {
          auto j = coral::spawn(executor, parent());
          stop_failing_allocations();
          j.wait();
        } else if (how == 1) {
          coral::spawn(executor, parent(), [l = lifetime()](std::exception_ptr, int) {});
        } else {
          coral::spawn(executor, parent(), asio::detached);
        }
      } catch (const std::bad_alloc&) {
      }
      stop_failing_allocations();
      const bool failed = allocation_failed();
      for (int i = 0; i < 2000 && lifetime::alive != 0; ++i) thread_of(executor);  // (a round trip)
      BOOST_TEST(lifetime::alive == 0, name << " (" << how << "), allocation " << k);
      if (!failed) break;
    }
  }
}

BOOST_AUTO_TEST_CASE(onto_a_thread_pool) {
  quiet_unobserved quiet;
  asio::thread_pool pool(2);
  check_spawn_onto("spawn onto a thread_pool", pool.get_executor());
  pool.join();
}

BOOST_AUTO_TEST_CASE(onto_an_io_context_run_by_two_threads) {
  quiet_unobserved quiet;
  asio::io_context ctx(2);
  auto work = asio::make_work_guard(ctx);
  std::thread a([&] { ctx.run(); }), b([&] { ctx.run(); });
  check_spawn_onto("spawn onto an io_context(2)", ctx.get_executor());
  work.reset();
  a.join();
  b.join();
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(joins_with_an_allocation_failing)

BOOST_AUTO_TEST_CASE(when_all_when_any_and_with_timeout) {
  quiet_unobserved quiet;
  check_every_allocation("when_all", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<int> {
      auto [a, b, c] = co_await coral::when_all(leaf(1), sleeper(2), parent());
      co_return a + b + c;
    });
  });
  check_every_allocation("when_any", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<std::size_t> {
      auto r = co_await coral::when_any(sleeper(1), leaf(2));
      co_return r.index();
    });
  });
  // (Each side in one when_all: if one fails, the other is cancelled rather than left waiting.)
  check_every_allocation("with_timeout around a receive", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<> {
      coral::channel<lifetime> ch(0);
      co_await coral::when_all(ch.send(lifetime()),
                               [&]() -> coral::task<> { auto v = co_await coral::with_timeout(1s, ch.receive()); }());
    });
  });
}

namespace {
coral::task<int, coral::pool_executor> on_the_pool(int v) {
  lifetime l;
  co_await coral::yield();
  co_return v;
}
}  // namespace

// Children on another executor are started through it, each on a strand of its own: a start that
// fails may come after another child has started, which must then end before the join does.
// Asio's strand creation cannot survive a failed allocation of its shared mutexes (every release),
// nor, before Boost 1.89, of the strand's shared state: from 1.89 on, with every mutex of the pool's
// strand service made beforehand, it throws cleanly. (Earlier releases skip this case.)
BOOST_AUTO_TEST_CASE(children_started_on_a_thread_pool,
                     *boost::unit_test::enable_if<(BOOST_ASIO_VERSION >= 103600)>()) {
  quiet_unobserved quiet;
  // (The default pool, and every mutex its strands pick from, exist before counting begins.)
  for (int i = 0; i < 5000; ++i) static_cast<void>(asio::make_strand(coral::pool_executor{}));
  check_every_allocation("when_all on the pool", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<int> {
      auto [a, b, c] = co_await coral::when_all(on_the_pool(1), on_the_pool(2), on_the_pool(3));
      co_return a + b + c;
    });
  });
  check_every_allocation("when_any on the pool", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<std::size_t> {
      auto r = co_await coral::when_any(on_the_pool(1), on_the_pool(2));
      co_return r.index();
    });
  });
  check_every_allocation("a child on the pool", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<int> { co_return co_await on_the_pool(1) + co_await on_the_pool(2); });
  });
  check_every_allocation("with_timeout on the pool", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<int> { co_return co_await coral::with_timeout(1s, on_the_pool(1)); });
  });
}

BOOST_AUTO_TEST_CASE(task_group) {
  quiet_unobserved quiet;
  check_every_allocation("task_group", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<> {
      coral::task_group g(co_await coral::this_task::executor);
      g.spawn(parent());
      g.spawn(leaf(1));
      g.spawn([l = lifetime()]() -> coral::task<> { co_await coral::sleep_for(1ms); });
      co_await g.join();
    });
  });
  // A child that fails makes the group cancel the others (whose sleeps end anyway).
  check_every_allocation("task_group, a child fails", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<> {
      coral::task_group g(co_await coral::this_task::executor);
      for (int i = 0; i < 3; ++i) g.spawn(sleeper(i));
      g.spawn([]() -> coral::task<> {
        co_await coral::yield();
        throw std::runtime_error("failed");
      });
      co_await g.join();
    });
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(waits_with_an_allocation_failing)

BOOST_AUTO_TEST_CASE(channel_send_receive_and_select) {
  quiet_unobserved quiet;
  // (Each side in one when_all: if one fails, the other is cancelled rather than left waiting.)
  check_every_allocation("channel hand-over", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<> {
      coral::channel<lifetime> ch(1);
      co_await coral::when_all(
          [&]() -> coral::task<> {
            for (int i = 0; i < 3; ++i) co_await ch.send(lifetime());
            ch.close();
          }(),
          [&]() -> coral::task<> {
            while (auto v = co_await ch.next()) {
            }
          }());
    });
  });
  check_every_allocation("select over two channels", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<> {
      coral::channel<lifetime> a(0), b(0);
      co_await coral::when_all(b.send(lifetime()), [&]() -> coral::task<> {
        auto r = co_await coral::when_any(a.receive(), b.receive());
      }());
    });
  });
}

// A waker on another thread (a plain thread here, a task of another context alike) posts the task
// it wakes, and wakers are mostly noexcept (try_send, set, release, unlock, a child's end): on an
// io_context or a thread_pool, with or without strands, the post must not allocate at all, or a
// std::bad_alloc would end the program. Each waker runs with its first allocation failing, on a
// thread whose Asio caches are empty; the woken task then goes on, and nothing is left behind.
using waker = std::function<void()>;

// `start` spawns tasks on `ctx` that end up waiting for `wake`. With a concurrency hint of 1 the
// tasks run on the io_context's executor as it is, else on a strand of it each.
void check_wake_from_another_thread(const char* name, const std::function<waker(asio::io_context&)>& start) {
  for (int hint : {1, 4}) {
    lifetime::alive = 0;
    {
      asio::io_context ctx(hint);
      waker wake = start(ctx);
      ctx.poll();  // every task is now waiting
      BOOST_TEST_REQUIRE(!ctx.stopped(), name << ", hint " << hint << ": nothing waits");
      long allocations = -1;
      bool failed = true;
      std::thread([&] {
        fail_allocation_at(0);
        wake();
        failed = allocation_failed();
        allocations = stop_failing_allocations();
      }).join();
      BOOST_TEST(!failed, name << ", hint " << hint);
      BOOST_TEST(allocations == 0, name << ", hint " << hint << ": the wake allocated " << allocations << " times");
      ctx.run_for(5s);
      BOOST_TEST(ctx.stopped(), name << ", hint " << hint << ": run() did not return");
    }
    BOOST_TEST(lifetime::alive == 0, name << ", hint " << hint);
  }
}

// On a thread_pool, where each task runs on a strand of the pool's executor.
BOOST_AUTO_TEST_CASE(woken_on_a_thread_pool_from_another_thread) {
  lifetime::alive = 0;
  {
    asio::thread_pool pool(2);
    auto ch = std::make_shared<coral::channel<int>>(0);
    coral::spawn(pool, [ch, l = lifetime()]() -> coral::task<> { BOOST_TEST(co_await ch->receive() == 7); });
    long allocations = -1;
    bool failed = true;
    std::thread([&] {
      fail_allocation_at(0);
      while (!ch->try_send(7)) std::this_thread::yield();  // until the task waits
      failed = allocation_failed();
      allocations = stop_failing_allocations();
    }).join();
    BOOST_TEST(!failed);
    BOOST_TEST(allocations == 0, "the wake allocated " << allocations << " times");
    pool.join();
  }
  BOOST_TEST(lifetime::alive == 0);
}

BOOST_AUTO_TEST_CASE(woken_from_another_thread) {
  check_wake_from_another_thread("channel receive woken by try_send", [](asio::io_context& ctx) -> waker {
    auto ch = std::make_shared<coral::channel<int>>(0);
    coral::spawn(ctx, [ch, l = lifetime()]() -> coral::task<> { BOOST_TEST(co_await ch->receive() == 7); });
    return [ch] { BOOST_TEST(ch->try_send(7)); };
  });
  check_wake_from_another_thread("channel send woken by try_receive", [](asio::io_context& ctx) -> waker {
    auto ch = std::make_shared<coral::channel<int>>(0);
    coral::spawn(ctx, [ch, l = lifetime()]() -> coral::task<> { co_await ch->send(7); });
    return [ch] { BOOST_TEST(ch->try_receive().value_or(0) == 7); };
  });
  check_wake_from_another_thread("three event waits woken by set", [](asio::io_context& ctx) -> waker {
    auto ev = std::make_shared<coral::event>();
    for (int i = 0; i < 3; ++i) {
      coral::spawn(ctx, [ev, l = lifetime()]() -> coral::task<> { co_await ev->wait(); });
    }
    return [ev] { ev->set(); };
  });
  check_wake_from_another_thread("semaphore acquire woken by release", [](asio::io_context& ctx) -> waker {
    auto s = std::make_shared<coral::semaphore>(0);
    coral::spawn(ctx, [s, l = lifetime()]() -> coral::task<> {
      co_await s->acquire();
      s->release();
    });
    return [s] { s->release(); };
  });
  check_wake_from_another_thread("mutex lock woken by unlock", [](asio::io_context& ctx) -> waker {
    auto m = std::make_shared<coral::async_mutex>();
    BOOST_TEST_REQUIRE(m->try_lock());
    coral::spawn(ctx, [m, l = lifetime()]() -> coral::task<> {
      co_await m->lock();
      m->unlock();
    });
    return [m] { m->unlock(); };
  });
}

BOOST_AUTO_TEST_CASE(sync_waits_and_the_awaitable_bridge) {
  quiet_unobserved quiet;
  // (A guard: a task that fails between lock() and unlock() keeps the mutex, as with std::mutex.)
  check_every_allocation("mutex, contended", [](asio::io_context& ctx) {
    auto m = std::make_shared<coral::async_mutex>();
    for (int i = 0; i < 3; ++i) {
      coral::spawn(ctx, [m, l = lifetime()]() -> coral::task<> {
        auto guard = co_await m->scoped_lock();
        co_await coral::yield();
      });
    }
  });
  check_every_allocation("asio::awaitable awaited by a task", [](asio::io_context& ctx) {
    coral::spawn(ctx, []() -> coral::task<int> {
      co_return co_await []() -> asio::awaitable<int> {
        lifetime l;
        co_return 7;
      }();
    });
  });
}

BOOST_AUTO_TEST_SUITE_END()
