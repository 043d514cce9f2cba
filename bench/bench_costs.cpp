// What each primitive costs, per operation in a steady loop, coral against the Asio-native way:
// heap allocations (counted at malloc, which operator new calls) and handlers run by the
// io_context (io_context::run() returns how many it ran), each side on an io_context(1). Every
// figure is the difference between a run of 2N operations and a run of N, divided by N, so that
// setting up and tearing down cancel out. Also the bytes a channel and a sleeping task hold.
//
//   await_immediate   co_await of a child that completes at once
//   yield             coral::yield() vs co_await asio::post(ex, use_awaitable)
//   spawn_handler     spawn(ctx, task, handler) vs co_spawn(ctx, awaitable, handler) of a task
//                     that awaits one child
//   spawn_job         the same with coral's job handle (spawn(ctx, task).then(...))
//   channel_pingpong  two tasks, unbuffered channels, a value handed to a waiting receiver: per
//                     message
//   channel_buffered  one producer, one consumer, capacity 64: per value (send and receive)
//   when_all_10       when_all of ten children that complete at once vs a parallel_group of ten
//                     co_spawned awaitables (wait_for_all)
//   select_2_waiting  a select over two unbuffered channels that finds both empty and waits;
//                     one producer sends on the first, yielding before each send:
//                     when_any(a.receive(), b.receive()) vs a parallel_group (wait_for_one)
//   mutex_contended   two tasks take turns: each holds an async_mutex across a yield, so the
//                     other waits and unlock hands the lock over; against a state kept on a
//                     strand, a hop onto the strand and a post per operation
//   timeout_op        with_timeout(1s, op) around an op that yields once and finishes first vs
//                     op() || timer.async_wait(use_awaitable)
//   sleep             sleep_for(0s) vs a steady_timer's async_wait (a timer made for each)
//
// `bench_costs [N]` prints every case (N operations and 2N). `bench_costs CASE SIDE N` runs one
// case's loop once on one side ("coral" or "asio"): costs_instructions.sh counts its
// instructions under callgrind.
#include <malloc.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "await_workload.hpp"
#include "report.hpp"
#include "task_workloads.hpp"

namespace asio = boost::asio;
using namespace task_workloads;
using namespace std::chrono_literals;

// ---- every heap allocation of the program, counted, and the bytes it holds. Counted at malloc,
// not at operator new: Asio allocates its handlers and coroutine frames with std::aligned_alloc
// (its recycling allocator), which a replaced operator new never sees. operator new calls malloc.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}

namespace {
std::atomic<long> allocations{0};
std::atomic<long> live_bytes{0};
// Off where callgrind counts instructions, so that the counting does not add to them.
bool counting = false;

void* counted(void* p) noexcept {
  if (p && counting) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    live_bytes.fetch_add(static_cast<long>(malloc_usable_size(p)), std::memory_order_relaxed);
  }
  return p;
}
void uncount(void* p) noexcept {
  if (p && counting) live_bytes.fetch_sub(static_cast<long>(malloc_usable_size(p)), std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(std::size_t size) noexcept {
  return counted(__libc_malloc(size));
}
void* calloc(std::size_t count, std::size_t size) noexcept {
  return counted(__libc_calloc(count, size));
}
void* realloc(void* p, std::size_t size) noexcept {
  const long old_size = p && counting ? static_cast<long>(malloc_usable_size(p)) : 0;
  void* moved = __libc_realloc(p, size);
  if (moved && counting) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    live_bytes.fetch_add(static_cast<long>(malloc_usable_size(moved)) - old_size, std::memory_order_relaxed);
  } else if (!moved && size == 0) {  // freed
    live_bytes.fetch_sub(old_size, std::memory_order_relaxed);
  }
  return moved;
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  return counted(__libc_memalign(alignment, size));
}
void* memalign(std::size_t alignment, std::size_t size) noexcept {
  return counted(__libc_memalign(alignment, size));
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  void* p = counted(__libc_memalign(alignment, size));
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) noexcept {
  uncount(p);
  __libc_free(p);
}
}

namespace {

using asio_channel = asio::experimental::channel<void(boost::system::error_code, long)>;

// What one run of a case's loop cost in all.
struct totals {
  long allocations = 0;
  long handlers = 0;
};

// Runs ctx after `start` has put the work on it; checks the result the work computed.
template <class Start>
totals measure(Start start) {
  asio::io_context ctx(1);
  const long before = allocations.load();
  start(ctx);
  const long handlers = static_cast<long>(ctx.run());
  return {allocations.load() - before, handlers};
}

// ---- await_immediate
totals coral_await(long n) {
  return measure([n](asio::io_context& ctx) {
    coral::spawn(ctx, await_workload::coral_loop(n),
                 [n](std::exception_ptr e, long v) { check(!e && v == n, "coral await_immediate sum"); });
  });
}
totals asio_await(long n) {
  return measure([n](asio::io_context& ctx) {
    asio::co_spawn(ctx, await_workload::asio_loop(n),
                   [n](std::exception_ptr e, long v) { check(!e && v == n, "asio await_immediate sum"); });
  });
}

// ---- yield
coral::task<long> coral_yield_loop(long n) {
  long done = 0;
  for (long i = 0; i < n; ++i, ++done) co_await coral::yield();
  co_return done;
}
asio::awaitable<long> asio_yield_loop(long n) {
  auto ex = co_await asio::this_coro::executor;
  long done = 0;
  for (long i = 0; i < n; ++i, ++done) co_await asio::post(ex, asio::use_awaitable);
  co_return done;
}
totals coral_yield(long n) {
  return measure([n](asio::io_context& ctx) {
    coral::spawn(ctx, coral_yield_loop(n),
                 [n](std::exception_ptr e, long v) { check(!e && v == n, "coral yield count"); });
  });
}
totals asio_yield(long n) {
  return measure([n](asio::io_context& ctx) {
    asio::co_spawn(ctx, asio_yield_loop(n),
                   [n](std::exception_ptr e, long v) { check(!e && v == n, "asio yield count"); });
  });
}

// ---- spawn

// Each spawned task returns 2; the sum tells that every one ran once.
template <class SpawnOne>
totals spawn_side(long n, const char* what, SpawnOne spawn_one) {
  long sum = 0;
  auto t = measure([&](asio::io_context& ctx) {
    for (long i = 0; i < n; ++i) spawn_one(ctx, sum);
  });
  check(sum == 2 * n, what);
  return t;
}
totals coral_spawn_handler(long n) {
  return spawn_side(n, "coral spawn_handler sum", [](asio::io_context& ctx, long& sum) {
    coral::spawn(ctx, coral_short_task(1), [&sum](std::exception_ptr e, int v) {
      check(!e, "coral spawned task failed");
      sum += v;
    });
  });
}
totals coral_spawn_job(long n) {
  return spawn_side(n, "coral spawn_job sum", [](asio::io_context& ctx, long& sum) {
    coral::spawn(ctx, coral_short_task(1)).then([&sum](int v) { sum += v; });
  });
}
totals asio_spawn(long n) {
  return spawn_side(n, "asio spawn sum", [](asio::io_context& ctx, long& sum) {
    asio::co_spawn(ctx, asio_short_task(1), [&sum](std::exception_ptr e, int v) {
      check(!e, "asio spawned task failed");
      sum += v;
    });
  });
}

// ---- channel_pingpong: n messages, n / 2 round trips
totals coral_pingpong(long n) {
  coral::channel<long> ping(0), pong(0);
  long last = -1;
  auto t = measure([&](asio::io_context& ctx) {
    coral::spawn(
        ctx,
        [&]() -> coral::task<> {
          for (long i = 0; i < n / 2; ++i) {
            co_await ping.send(i);
            last = co_await pong.receive();
            check(last == i, "coral pong");
          }
        },
        asio::detached);
    coral::spawn(
        ctx,
        [&]() -> coral::task<> {
          for (long i = 0; i < n / 2; ++i) co_await pong.send(co_await ping.receive());
        },
        asio::detached);
  });
  check(last == n / 2 - 1, "coral pingpong finished");
  return t;
}
totals asio_pingpong(long n) {
  long last = -1;
  auto t = measure([&](asio::io_context& ctx) {
    auto ping = std::make_shared<asio_channel>(ctx, 0), pong = std::make_shared<asio_channel>(ctx, 0);
    asio::co_spawn(
        ctx,
        [&, ping, pong]() -> asio::awaitable<void> {
          for (long i = 0; i < n / 2; ++i) {
            co_await ping->async_send(boost::system::error_code{}, i, asio::use_awaitable);
            last = co_await pong->async_receive(asio::use_awaitable);
            check(last == i, "asio pong");
          }
        },
        asio::detached);
    asio::co_spawn(
        ctx,
        [&, ping, pong]() -> asio::awaitable<void> {
          for (long i = 0; i < n / 2; ++i) {
            long v = co_await ping->async_receive(asio::use_awaitable);
            co_await pong->async_send(boost::system::error_code{}, v, asio::use_awaitable);
          }
        },
        asio::detached);
  });
  check(last == n / 2 - 1, "asio pingpong finished");
  return t;
}

// ---- channel_buffered
totals coral_buffered(long n) {
  coral::channel<long> ch(64);
  long sum = 0;
  auto t = measure([&](asio::io_context& ctx) {
    coral::spawn(
        ctx,
        [&]() -> coral::task<> {
          for (long i = 0; i < n; ++i) co_await ch.send(i);
        },
        asio::detached);
    coral::spawn(
        ctx,
        [&]() -> coral::task<> {
          for (long i = 0; i < n; ++i) sum += co_await ch.receive();
        },
        asio::detached);
  });
  check(sum == n * (n - 1) / 2, "coral buffered sum");
  return t;
}
totals asio_buffered(long n) {
  long sum = 0;
  auto t = measure([&](asio::io_context& ctx) {
    auto ch = std::make_shared<asio_channel>(ctx, 64);
    asio::co_spawn(
        ctx,
        [&, ch]() -> asio::awaitable<void> {
          for (long i = 0; i < n; ++i) co_await ch->async_send(boost::system::error_code{}, i, asio::use_awaitable);
        },
        asio::detached);
    asio::co_spawn(
        ctx,
        [&, ch]() -> asio::awaitable<void> {
          for (long i = 0; i < n; ++i) sum += co_await ch->async_receive(asio::use_awaitable);
        },
        asio::detached);
  });
  check(sum == n * (n - 1) / 2, "asio buffered sum");
  return t;
}

// ---- when_all_10
totals coral_when_all(long n) {
  return measure([n](asio::io_context& ctx) {
    coral::spawn(ctx, coral_when_all_loop(n),
                 [n](std::exception_ptr e, long v) { check(!e && v == 55 * n, "coral when_all sum"); });
  });
}
totals asio_when_all(long n) {
  return measure([n](asio::io_context& ctx) {
    asio::co_spawn(ctx, asio_when_all_loop(n),
                   [n](std::exception_ptr e, long v) { check(!e && v == 55 * n, "asio when_all sum"); });
  });
}

// ---- select_2_waiting: only the first channel is fed, so every select waits on both
totals coral_select(long n) {
  coral::channel<long> fed(0), idle(0);
  long sum = 0;
  auto t = measure([&](asio::io_context& ctx) {
    coral::spawn(
        ctx,
        [&]() -> coral::task<> {
          for (long i = 1; i <= n; ++i) {
            co_await coral::yield();
            co_await fed.send(i);
          }
        },
        asio::detached);
    coral::spawn(
        ctx,
        [&]() -> coral::task<> {
          for (long i = 0; i < n; ++i) {
            auto r = co_await coral::when_any(fed.receive(), idle.receive());
            check(r.index() == 0, "coral select: a value from the idle channel");
            sum += std::get<0>(r);
          }
        },
        asio::detached);
  });
  check(sum == n * (n + 1) / 2, "coral select sum");
  return t;
}
totals asio_select(long n) {
  long sum = 0;
  auto t = measure([&](asio::io_context& ctx) {
    auto fed = std::make_shared<asio_channel>(ctx, 0), idle = std::make_shared<asio_channel>(ctx, 0);
    asio::co_spawn(
        ctx,
        [&, fed]() -> asio::awaitable<void> {
          auto ex = co_await asio::this_coro::executor;
          for (long i = 1; i <= n; ++i) {
            co_await asio::post(ex, asio::use_awaitable);
            co_await fed->async_send(boost::system::error_code{}, i, asio::use_awaitable);
          }
        },
        asio::detached);
    asio::co_spawn(
        ctx,
        [&, fed, idle]() -> asio::awaitable<void> {
          for (long i = 0; i < n; ++i) {
            auto [order, e1, v1, e2, v2] = co_await asio::experimental::make_parallel_group(
                                               fed->async_receive(asio::deferred), idle->async_receive(asio::deferred))
                                               .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
            check(order[0] == 0 && !e1, "asio select: a value from the idle channel");
            sum += v1;
          }
        },
        asio::detached);
  });
  check(sum == n * (n + 1) / 2, "asio select sum");
  return t;
}

// ---- mutex_contended: two tasks, n lock/unlock pairs in all
struct guarded_counter {
  long value = 0;
  bool inside = false;
  void enter() {
    check(!inside, "two tasks inside at once");
    inside = true;
    ++value;
  }
  void leave() { inside = false; }
};
totals coral_mutex(long n) {
  coral::async_mutex m;
  guarded_counter counter;
  auto t = measure([&](asio::io_context& ctx) {
    for (int k = 0; k < 2; ++k) {
      coral::spawn(
          ctx,
          [&]() -> coral::task<> {
            for (long i = 0; i < n / 2; ++i) {
              auto guard = co_await m.scoped_lock();
              counter.enter();
              co_await coral::yield();  // holds the lock across a suspension: the other task waits
              counter.leave();
            }
          },
          asio::detached);
    }
  });
  check(counter.value == n / 2 * 2, "coral mutex counter");
  return t;
}
totals asio_mutex(long n) {
  guarded_counter counter;
  auto t = measure([&](asio::io_context& ctx) {
    auto strand = asio::make_strand(ctx);  // guards the counter
    for (int k = 0; k < 2; ++k) {
      asio::co_spawn(
          ctx,
          [&, strand]() -> asio::awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            for (long i = 0; i < n / 2; ++i) {
              co_await asio::post(strand, asio::bind_executor(strand, asio::use_awaitable));
              counter.enter();
              counter.leave();
              co_await asio::post(ex, asio::use_awaitable);  // as coral's side, one suspension per turn
            }
          },
          asio::detached);
    }
  });
  check(counter.value == n / 2 * 2, "asio strand counter");
  return t;
}

// ---- timeout_op
totals coral_timeout(long n) {
  return measure([n](asio::io_context& ctx) {
    coral::spawn(ctx, coral_timeout_loop(n),
                 [n](std::exception_ptr e, long v) { check(!e && v == n, "coral timeout_op: an op timed out"); });
  });
}
totals asio_timeout(long n) {
  return measure([n](asio::io_context& ctx) {
    asio::co_spawn(ctx, asio_timeout_loop(n),
                   [n](std::exception_ptr e, long v) { check(!e && v == n, "asio timeout_op: an op timed out"); });
  });
}

// ---- sleep: a timer that has expired when it is waited on
coral::task<long> coral_sleep_loop(long n) {
  long woken = 0;
  for (long i = 0; i < n; ++i, ++woken) co_await coral::sleep_for(0s);
  co_return woken;
}
// A timer per sleep, as coral's sleep_for makes one.
asio::awaitable<long> asio_sleep_loop(long n) {
  auto ex = co_await asio::this_coro::executor;
  long woken = 0;
  for (long i = 0; i < n; ++i, ++woken) {
    asio::steady_timer timer(ex, 0s);
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return woken;
}
totals coral_sleep(long n) {
  return measure([n](asio::io_context& ctx) {
    coral::spawn(ctx, coral_sleep_loop(n),
                 [n](std::exception_ptr e, long v) { check(!e && v == n, "coral sleep count"); });
  });
}
totals asio_sleep(long n) {
  return measure([n](asio::io_context& ctx) {
    asio::co_spawn(ctx, asio_sleep_loop(n),
                   [n](std::exception_ptr e, long v) { check(!e && v == n, "asio sleep count"); });
  });
}

struct cost_case {
  const char* name;
  totals (*coral)(long);
  totals (*asio)(long);
};
constexpr cost_case cases[] = {
    {"await_immediate", coral_await, asio_await},
    {"yield", coral_yield, asio_yield},
    {"spawn_handler", coral_spawn_handler, asio_spawn},
    {"spawn_job", coral_spawn_job, asio_spawn},
    {"channel_pingpong", coral_pingpong, asio_pingpong},
    {"channel_buffered", coral_buffered, asio_buffered},
    {"when_all_10", coral_when_all, asio_when_all},
    {"select_2_waiting", coral_select, asio_select},
    {"mutex_contended", coral_mutex, asio_mutex},
    {"timeout_op", coral_timeout, asio_timeout},
    {"sleep", coral_sleep, asio_sleep},
};

// Per operation: the difference between 2N operations and N, over N. A first run fills the
// per-thread caches (coroutine frames), as a program that has been running a while has them.
struct per_op {
  double allocations;
  double handlers;
};
per_op steady(totals (*side)(long), long n) {
  side(n);
  const totals once = side(n), twice = side(2 * n);
  return {static_cast<double>(twice.allocations - once.allocations) / n,
          static_cast<double>(twice.handlers - once.handlers) / n};
}

// Heap bytes held per sleeping task: `count` tasks asleep on one io_context, once every one of
// them waits on its timer, against before they were spawned (what the allocator hands out,
// without its own headers). They sleep an hour: destroying the context ends them, and gives back
// what they held.
template <class SpawnSleeper>
double sleeping_task_bytes(long count, SpawnSleeper spawn_sleeper) {
  long asleep = 0;
  const long before = live_bytes.load();
  long held = 0;
  {
    asio::io_context ctx(1);
    for (long i = 0; i < count; ++i) spawn_sleeper(ctx, asleep);
    ctx.poll();
    held = live_bytes.load() - before;
    check(asleep == count, "every sleeper started its sleep");
  }
  // The frames freed last stay in the thread's cache.
  check(live_bytes.load() - before < held / 100, "the sleepers' memory was given back");
  return static_cast<double>(held) / count;
}
coral::task<> coral_sleeper(long& asleep) {
  ++asleep;
  co_await coral::sleep_for(1h);
  std::abort();  // never wakes
}
asio::awaitable<void> asio_sleeper(long& asleep) {
  asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
  ++asleep;
  co_await timer.async_wait(asio::use_awaitable);
  std::abort();  // never wakes
}

// The heap bytes a channel holds: the object (allocated here too, so that both sides are rounded
// the same way) and what its constructor allocates.
template <class Make>
double channel_bytes(Make make) {
  const long before = live_bytes.load();
  auto ch = make();
  return static_cast<double>(live_bytes.load() - before);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4) {  // one case, one side, N operations: for callgrind
    for (const auto& c : cases) {
      if (std::strcmp(c.name, argv[1]) != 0) continue;
      const long n = std::atol(argv[3]);
      (std::strcmp(argv[2], "coral") == 0 ? c.coral : c.asio)(n);
      return 0;
    }
    std::fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
  }
  const long n = argc > 1 ? std::atol(argv[1]) : 10'000;
  counting = true;
  for (const auto& c : cases) {
    const per_op coral_side = steady(c.coral, n), asio_side = steady(c.asio, n);
    report((std::string(c.name) + "_allocations").c_str(), coral_side.allocations, asio_side.allocations,
           "allocations/op");
    report((std::string(c.name) + "_handlers").c_str(), coral_side.handlers, asio_side.handlers, "handlers/op");
  }
  report("channel_sizeof", sizeof(coral::channel<int>),
         sizeof(asio::experimental::channel<void(boost::system::error_code, int)>), "bytes");
  asio::io_context ctx(1);
  report("channel_bytes", channel_bytes([] { return std::make_unique<coral::channel<int>>(0); }), channel_bytes([&] {
           return std::make_unique<asio::experimental::channel<void(boost::system::error_code, int)>>(ctx, 0);
         }),
         "bytes");
  const long sleepers = 10'000;
  report("sleeping_task_bytes",
         sleeping_task_bytes(sleepers, [](asio::io_context& c,
                                          long& asleep) { coral::spawn(c, coral_sleeper(asleep), asio::detached); }),
         sleeping_task_bytes(sleepers, [](asio::io_context& c,
                                          long& asleep) { asio::co_spawn(c, asio_sleeper(asleep), asio::detached); }),
         "bytes");
}
