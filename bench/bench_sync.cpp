// Synchronisation benchmarks.
//   mutex_contended  4 tasks x 100k increments of one counter on a 2-thread pool: coral tasks under
//                    a coral::async_mutex, against asio::awaitable coroutines that hop onto one
//                    strand for each increment (the Asio-native way to protect state). Per
//                    increment (lock + unlock, or one hop). No target: reported for reference.
//   lock_timeout     one task entering a critical section with a time limit, 200k times, on a
//                    single-threaded io_context: `co_await with_timeout(1s, m.lock())` on a free
//                    coral::async_mutex, against an asio::awaitable racing the hop onto the strand
//                    that guards the state with a timer (`hop || timer.async_wait`, awaitable
//                    operators). Per entry. Target <= 0.5.
//   rw_read_mostly   4 tasks x 100k accesses to one table on a 2-thread pool, 1 in 8 a write:
//                    coral tasks under a coral::shared_mutex (readers together, writers alone),
//                    against asio::awaitable coroutines that hop onto one strand for each access
//                    (which serialises the readers too). Per access. No target: for reference.
//   condition_handoff one producer and one consumer passing 200k items through a one-slot buffer
//                    on a 2-thread pool, each waiting while it is full (empty): coral tasks with an
//                    async_mutex and two coral::condition_variables, against asio::awaitable
//                    coroutines on one strand that wait on steady_timers which never expire and
//                    are cancelled to notify (the Asio idiom for a condition variable). Per item.
//                    No target: for reference.
#include <algorithm>
#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <future>
#include <optional>
#include <utility>

#include "report.hpp"

namespace asio = boost::asio;

namespace {

constexpr int tasks = 4;

// Both sides check that no two increments ever overlap (and so that the counter is right).
struct guarded_counter {
  long value = 0;
  std::atomic<int> inside{0};
  void increment() {
    check(inside.fetch_add(1, std::memory_order_acquire) == 0, "two increments at once");
    ++value;
    inside.fetch_sub(1, std::memory_order_release);
  }
};

// Runs `start(pool, on_done)` for each task on a 2-thread pool and waits for them all.
template <class Start>
void run_tasks(Start start) {
  asio::thread_pool pool(2);
  std::atomic<int> left{tasks};
  std::promise<void> all_done;
  auto on_done = [&](std::exception_ptr e) {
    check(!e, "a task failed");
    if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) all_done.set_value();
  };
  for (int t = 0; t < tasks; ++t) start(pool, on_done);
  all_done.get_future().wait();
  pool.join();
}

double coral_mutex(long per_task) {
  return ns_per(tasks * per_task, [&] {
    coral::async_mutex m;
    guarded_counter counter;
    run_tasks([&](asio::thread_pool& pool, auto& on_done) {
      coral::spawn(
          pool,
          [&]() -> coral::task<> {
            for (long i = 0; i < per_task; ++i) {
              auto guard = co_await m.scoped_lock();
              counter.increment();
            }
          },
          on_done);
    });
    check(counter.value == tasks * per_task, "coral counter");
  });
}

double asio_strand(long per_task) {
  return ns_per(tasks * per_task, [&] {
    guarded_counter counter;
    std::optional<asio::strand<asio::thread_pool::executor_type>> strand;  // guards the counter
    run_tasks([&](asio::thread_pool& pool, auto& on_done) {
      if (!strand) strand.emplace(pool.get_executor());
      asio::co_spawn(
          pool,
          [&]() -> asio::awaitable<void> {
            for (long i = 0; i < per_task; ++i) {
              // Resumes on the strand; the increment runs there.
              co_await asio::post(*strand, asio::bind_executor(*strand, asio::use_awaitable));
              counter.increment();
            }
          },
          on_done);
    });
    check(counter.value == tasks * per_task, "asio counter");
  });
}

double coral_lock_timeout(long n) {
  return ns_per(n, [&] {
    asio::io_context ctx(1);
    coral::async_mutex m;
    guarded_counter counter;
    coral::spawn(ctx, [&]() -> coral::task<> {
      using namespace std::chrono_literals;
      for (long i = 0; i < n; ++i) {
        auto guard = co_await coral::with_timeout(1s, m.scoped_lock());
        counter.increment();
      }
    });
    ctx.run();
    check(counter.value == n, "coral lock_timeout counter");
  });
}

double asio_strand_timeout(long n) {
  return ns_per(n, [&] {
    asio::io_context ctx(1);
    guarded_counter counter;
    auto strand = asio::make_strand(ctx);
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
          using namespace asio::experimental::awaitable_operators;
          using namespace std::chrono_literals;
          asio::steady_timer timer(ctx);
          for (long i = 0; i < n; ++i) {
            timer.expires_after(1s);
            auto entered = co_await (asio::post(strand, asio::bind_executor(strand, asio::use_awaitable)) ||
                                     timer.async_wait(asio::use_awaitable));
            check(entered.index() == 0, "asio lock_timeout timed out");
            counter.increment();
          }
        },
        [](std::exception_ptr e) { check(!e, "asio lock_timeout failed"); });
    ctx.run();
    check(counter.value == n, "asio lock_timeout counter");
  });
}

// A table read far more often than it is written: a reader checks that it is consistent (no
// writer is half-way through), a writer changes both halves.
struct read_mostly_table {
  long first = 0, second = 0;
  std::atomic<int> writers{0};
  void read() const {
    check(writers.load(std::memory_order_acquire) == 0 && first == second, "a reader beside a writer");
  }
  void write() {
    check(writers.fetch_add(1, std::memory_order_acquire) == 0, "two writers at once");
    ++first;
    ++second;
    writers.fetch_sub(1, std::memory_order_release);
  }
};

constexpr long write_every = 8;

double coral_shared_mutex(long per_task) {
  return ns_per(tasks * per_task, [&] {
    coral::shared_mutex m;
    read_mostly_table table;
    run_tasks([&](asio::thread_pool& pool, auto& on_done) {
      coral::spawn(
          pool,
          [&]() -> coral::task<> {
            for (long i = 0; i < per_task; ++i) {
              if (i % write_every == 0) {
                auto guard = co_await m.scoped_lock();
                table.write();
              } else {
                auto guard = co_await m.scoped_lock_shared();
                table.read();
              }
            }
          },
          on_done);
    });
    check(table.first == tasks * ((per_task + write_every - 1) / write_every), "coral table");
  });
}

double asio_strand_read_mostly(long per_task) {
  return ns_per(tasks * per_task, [&] {
    read_mostly_table table;
    std::optional<asio::strand<asio::thread_pool::executor_type>> strand;  // guards the table
    run_tasks([&](asio::thread_pool& pool, auto& on_done) {
      if (!strand) strand.emplace(pool.get_executor());
      asio::co_spawn(
          pool,
          [&]() -> asio::awaitable<void> {
            for (long i = 0; i < per_task; ++i) {
              co_await asio::post(*strand, asio::bind_executor(*strand, asio::use_awaitable));
              if (i % write_every == 0) {
                table.write();
              } else {
                table.read();
              }
            }
          },
          on_done);
    });
    check(table.first == tasks * ((per_task + write_every - 1) / write_every), "asio table");
  });
}

// Both sides check that the consumer receives every item once, in order.
struct handoff_check {
  long next = 0;
  void received(long item) {
    check(item == next, "an item lost, repeated or out of order");
    ++next;
  }
};

double coral_condition_handoff(long n) {
  return ns_per(n, [&] {
    asio::thread_pool pool(2);
    coral::async_mutex m;
    coral::condition_variable not_full, not_empty;
    std::optional<long> slot;
    handoff_check consumer_side;
    auto producer = coral::spawn(pool, [&]() -> coral::task<> {
      for (long i = 0; i < n; ++i) {
        co_await m.lock();
        co_await not_full.wait(m, [&] { return !slot; });
        slot = i;
        m.unlock();
        not_empty.notify_one();
      }
    });
    auto consumer = coral::spawn(pool, [&]() -> coral::task<> {
      for (long i = 0; i < n; ++i) {
        co_await m.lock();
        co_await not_empty.wait(m, [&] { return slot.has_value(); });
        consumer_side.received(*std::exchange(slot, std::nullopt));
        m.unlock();
        not_full.notify_one();
      }
    });
    producer.get_result();
    consumer.get_result();
    check(consumer_side.next == n, "coral handoff count");
  });
}

double asio_timer_condition_handoff(long n) {
  return ns_per(n, [&] {
    asio::thread_pool pool(2);
    auto strand = asio::make_strand(pool);  // guards the slot and both "condition" timers
    asio::steady_timer not_full(strand, asio::steady_timer::time_point::max());
    asio::steady_timer not_empty(strand, asio::steady_timer::time_point::max());
    std::optional<long> slot;
    handoff_check consumer_side;
    std::atomic<int> left{2};
    std::promise<void> done;
    auto on_done = [&](std::exception_ptr e) {
      check(!e, "asio handoff failed");
      if (left.fetch_sub(1) == 1) done.set_value();
    };
    asio::co_spawn(
        strand,
        [&]() -> asio::awaitable<void> {
          boost::system::error_code ignored;  // (a notification is a cancellation)
          for (long i = 0; i < n; ++i) {
            while (slot) co_await not_full.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
            slot = i;
            not_empty.cancel_one();
          }
        },
        on_done);
    asio::co_spawn(
        strand,
        [&]() -> asio::awaitable<void> {
          boost::system::error_code ignored;
          for (long i = 0; i < n; ++i) {
            while (!slot) co_await not_empty.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
            consumer_side.received(*std::exchange(slot, std::nullopt));
            not_full.cancel_one();
          }
        },
        on_done);
    done.get_future().wait();
    pool.join();
    check(consumer_side.next == n, "asio handoff count");
  });
}

}  // namespace

int main(int argc, char** argv) {
  const long per_task = argc > 1 ? std::atol(argv[1]) : 100'000;
  const int rounds = 3;  // best of: the machines are shared and noisy
  double coral = 1e300, asio_side = 1e300;
  for (int r = 0; r < rounds; ++r) {
    coral = std::min(coral, coral_mutex(per_task));
    asio_side = std::min(asio_side, asio_strand(per_task));
  }
  report("mutex_contended", coral, asio_side, "ns/increment");
  double coral_timed = 1e300, asio_timed = 1e300;
  for (int r = 0; r < rounds; ++r) {
    coral_timed = std::min(coral_timed, coral_lock_timeout(2 * per_task));
    asio_timed = std::min(asio_timed, asio_strand_timeout(2 * per_task));
  }
  report("lock_timeout", coral_timed, asio_timed, "ns/entry");
  double coral_rw = 1e300, asio_rw = 1e300;
  for (int r = 0; r < rounds; ++r) {
    coral_rw = std::min(coral_rw, coral_shared_mutex(per_task));
    asio_rw = std::min(asio_rw, asio_strand_read_mostly(per_task));
  }
  report("rw_read_mostly", coral_rw, asio_rw, "ns/access");
  double coral_cv = 1e300, asio_cv = 1e300;
  for (int r = 0; r < rounds; ++r) {
    coral_cv = std::min(coral_cv, coral_condition_handoff(2 * per_task));
    asio_cv = std::min(asio_cv, asio_timer_condition_handoff(2 * per_task));
  }
  report("condition_handoff", coral_cv, asio_cv, "ns/item");
  std::printf(
      "summary: mutex_contended ratio=%.3f (no target), lock_timeout ratio=%.3f (target <= 0.5), "
      "rw_read_mostly ratio=%.3f (no target), condition_handoff ratio=%.3f (no target)\n",
      coral / asio_side, coral_timed / asio_timed, coral_rw / asio_rw, coral_cv / asio_cv);
}
