// await_immediate: awaiting a child that completes without suspending.
// yield: re-queueing the coroutine on a single-threaded io_context.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>

#include "await_workload.hpp"
#include "report.hpp"

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

coral::task<> coral_yield_loop(long n) {
  for (long i = 0; i < n; ++i) co_await coral::yield();
}
asio::awaitable<void> asio_yield_loop(long n) {
  auto ex = co_await asio::this_coro::executor;
  for (long i = 0; i < n; ++i) co_await asio::post(ex, asio::use_awaitable);
}

template <class F>
double ns_per_op(long n, F run) {
  auto start = clock_type::now();
  run();
  return std::chrono::duration<double, std::nano>(clock_type::now() - start).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  const long awaits = argc > 1 ? std::atol(argv[1]) : 10'000'000;
  const long yields = argc > 2 ? std::atol(argv[2]) : 2'000'000;
  const int rounds = 3;  // best of: the machines are shared and noisy

  double coral_await = 1e300, asio_await = 1e300, coral_yield = 1e300, asio_yield = 1e300;
  for (int r = 0; r < rounds; ++r) {
    coral_await = std::min(coral_await, ns_per_op(awaits, [&] {
                             asio::io_context ctx(1);
                             auto j = coral::spawn(ctx, await_workload::coral_loop(awaits));
                             ctx.run();
                             if (j.get_result() != awaits) std::abort();
                           }));
    asio_await = std::min(asio_await, ns_per_op(awaits, [&] {
                            asio::io_context ctx(1);
                            long result = 0;
                            asio::co_spawn(ctx, await_workload::asio_loop(awaits),
                                           [&](std::exception_ptr, long v) { result = v; });
                            ctx.run();
                            if (result != awaits) std::abort();
                          }));
    coral_yield = std::min(coral_yield, ns_per_op(yields, [&] {
                             asio::io_context ctx(1);
                             coral::spawn(ctx, coral_yield_loop(yields));
                             ctx.run();
                           }));
    asio_yield = std::min(asio_yield, ns_per_op(yields, [&] {
                            asio::io_context ctx(1);
                            asio::co_spawn(ctx, asio_yield_loop(yields), asio::detached);
                            ctx.run();
                          }));
  }
  report("await_immediate", coral_await, asio_await, "ns/op");
  report("yield", coral_yield, asio_yield, "ns/op");
  std::printf("summary: await_immediate ratio=%.3f (target <= 0.5), yield ratio=%.3f (target <= 1.0)\n",
              coral_await / asio_await, coral_yield / asio_yield);
}
