// await_immediate: awaiting a child that completes without suspending.
// yield: re-queueing the coroutine on a single-threaded io_context.
// spawn_pool: spawning short tasks (each awaits one child and returns) on a 2-thread thread_pool
// and joining them all, with a completion handler on both sides (spawn_pool) and with coral's job
// handle, which makes the task cancellable and so gives it a strand of its own (spawn_pool_job).
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <future>

#include "await_workload.hpp"
#include "report.hpp"
#include "task_workloads.hpp"

namespace asio = boost::asio;
using namespace task_workloads;

namespace {

coral::task<> coral_yield_loop(long n) {
  for (long i = 0; i < n; ++i) co_await coral::yield();
}
asio::awaitable<void> asio_yield_loop(long n) {
  auto ex = co_await asio::this_coro::executor;
  for (long i = 0; i < n; ++i) co_await asio::post(ex, asio::use_awaitable);
}

// Spawns n tasks on a 2-thread pool through `spawn_one(pool, on_done)` and waits for every
// completion handler.
template <class Spawn>
void spawn_and_join(long n, Spawn spawn_one) {
  asio::thread_pool pool(2);
  std::atomic<long> left{n};
  std::promise<void> all_done;
  auto on_done = [&](std::exception_ptr e, int) {
    if (e) std::abort();
    if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) all_done.set_value();
  };
  for (long i = 0; i < n; ++i) spawn_one(pool, on_done);
  all_done.get_future().wait();
  pool.join();
}

}  // namespace

int main(int argc, char** argv) {
  const long awaits = argc > 1 ? std::atol(argv[1]) : 10'000'000;
  const long yields = argc > 2 ? std::atol(argv[2]) : 2'000'000;
  const long spawns = argc > 3 ? std::atol(argv[3]) : 1'000'000;
  const int rounds = 3;  // best of: the machines are shared and noisy

  double coral_await = 1e300, asio_await = 1e300, coral_yield = 1e300, asio_yield = 1e300;
  double coral_spawn = 1e300, asio_spawn = 1e300, coral_spawn_job = 1e300;
  for (int r = 0; r < rounds; ++r) {
    coral_await = std::min(coral_await, ns_per(awaits, [&] {
                             asio::io_context ctx(1);
                             auto j = coral::spawn(ctx, await_workload::coral_loop(awaits));
                             ctx.run();
                             if (j.get_result() != awaits) std::abort();
                           }));
    asio_await = std::min(asio_await, ns_per(awaits, [&] {
                            asio::io_context ctx(1);
                            long result = 0;
                            asio::co_spawn(ctx, await_workload::asio_loop(awaits),
                                           [&](std::exception_ptr, long v) { result = v; });
                            ctx.run();
                            if (result != awaits) std::abort();
                          }));
    coral_yield = std::min(coral_yield, ns_per(yields, [&] {
                             asio::io_context ctx(1);
                             coral::spawn(ctx, coral_yield_loop(yields));
                             ctx.run();
                           }));
    asio_yield = std::min(asio_yield, ns_per(yields, [&] {
                            asio::io_context ctx(1);
                            asio::co_spawn(ctx, asio_yield_loop(yields), asio::detached);
                            ctx.run();
                          }));
    coral_spawn = std::min(coral_spawn, ns_per(spawns, [&] {
                             spawn_and_join(spawns, [](asio::thread_pool& pool, auto& on_done) {
                               coral::spawn(pool, coral_short_task(1), on_done);
                             });
                           }));
    // The same with a job handle (the task can be cancelled, so it gets a strand of its own).
    coral_spawn_job = std::min(coral_spawn_job, ns_per(spawns, [&] {
                                 spawn_and_join(spawns, [](asio::thread_pool& pool, auto& on_done) {
                                   coral::spawn(pool, coral_short_task(1)).then([&](int v) { on_done(nullptr, v); });
                                 });
                               }));
    asio_spawn = std::min(asio_spawn, ns_per(spawns, [&] {
                            spawn_and_join(spawns, [](asio::thread_pool& pool, auto& on_done) {
                              asio::co_spawn(pool, asio_short_task(1), on_done);
                            });
                          }));
  }
  report("await_immediate", coral_await, asio_await, "ns/op");
  report("yield", coral_yield, asio_yield, "ns/op");
  report("spawn_pool", coral_spawn, asio_spawn, "ns/task");
  report("spawn_pool_job", coral_spawn_job, asio_spawn, "ns/task");
  std::printf(
      "summary: await_immediate ratio=%.3f (target <= 0.5), yield ratio=%.3f (target <= 1.0), spawn_pool "
      "ratio=%.3f (target <= 1.0)\n",
      coral_await / asio_await, coral_yield / asio_yield, coral_spawn / asio_spawn);
}
