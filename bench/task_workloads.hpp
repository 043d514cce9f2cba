#pragma once

// Workloads more than one benchmark program runs, each written once for each side:
//   short_task(v)       a task that awaits one child, which completes at once (what bench_core and
//                       bench_costs spawn)
//   when_all_loop(n)    n joins of 10 children that complete at once: coral::when_all against a
//                       parallel_group of co_spawns (bench_structured, bench_costs)
//   timeout_loop(n)     n operations (a yield, a post) under a 1 s time-out that never expires:
//                       with_timeout against `op || timer.async_wait` (bench_structured, bench_costs)
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coral/task.hpp>
#include <coral/when_all.hpp>
#include <coral/with_timeout.hpp>
#include <coral/yield.hpp>

namespace task_workloads {

namespace asio = boost::asio;

inline coral::task<int> coral_short_child(int v) {
  co_return v + 1;
}
inline coral::task<int> coral_short_task(int v) {
  co_return co_await coral_short_child(v);
}
inline asio::awaitable<int> asio_short_child(int v) {
  co_return v + 1;
}
inline asio::awaitable<int> asio_short_task(int v) {
  co_return co_await asio_short_child(v);
}

inline coral::task<int> coral_child(int v) {
  co_return v;
}
inline asio::awaitable<int> asio_child(int v) {
  co_return v;
}

// Each join sums 1..10: n joins sum to 55 n.
inline coral::task<long> coral_when_all_loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    auto [a, b, c, d, e, f, g, h, k, l] =
        co_await coral::when_all(coral_child(1), coral_child(2), coral_child(3), coral_child(4), coral_child(5),
                                 coral_child(6), coral_child(7), coral_child(8), coral_child(9), coral_child(10));
    sum += a + b + c + d + e + f + g + h + k + l;
  }
  co_return sum;
}
inline asio::awaitable<long> asio_when_all_loop(long n) {
  auto ex = co_await asio::this_coro::executor;
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    auto [order, e1, a, e2, b, e3, c, e4, d, e5, e, e6, f, e7, g, e8, h, e9, k, e10, l] =
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ex, asio_child(1), asio::deferred), asio::co_spawn(ex, asio_child(2), asio::deferred),
            asio::co_spawn(ex, asio_child(3), asio::deferred), asio::co_spawn(ex, asio_child(4), asio::deferred),
            asio::co_spawn(ex, asio_child(5), asio::deferred), asio::co_spawn(ex, asio_child(6), asio::deferred),
            asio::co_spawn(ex, asio_child(7), asio::deferred), asio::co_spawn(ex, asio_child(8), asio::deferred),
            asio::co_spawn(ex, asio_child(9), asio::deferred), asio::co_spawn(ex, asio_child(10), asio::deferred))
            .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    sum += a + b + c + d + e + f + g + h + k + l;
  }
  co_return sum;
}

inline coral::task<int> coral_op() {
  co_await coral::yield();
  co_return 1;
}
inline asio::awaitable<int> asio_op() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  co_return 1;
}
// Each operation gives 1: n of them sum to n.
inline coral::task<long> coral_timeout_loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += co_await coral::with_timeout(std::chrono::seconds(1), coral_op());
  co_return sum;
}
inline asio::awaitable<long> asio_timeout_loop(long n) {
  using namespace asio::experimental::awaitable_operators;
  auto ex = co_await asio::this_coro::executor;
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    asio::steady_timer timer(ex, std::chrono::seconds(1));
    auto r = co_await (asio_op() || timer.async_wait(asio::use_awaitable));
    if (r.index() == 0) sum += std::get<0>(r);
  }
  co_return sum;
}

}  // namespace task_workloads
