// Drop-in for Asio code, side by side on a single-threaded io_context:
//   operators_and  `co_await (a() && b())` on two tasks that complete at once: coral's operator
//                  (when_all) vs asio::awaitable with asio::experimental::awaitable_operators.
//   interop_await  awaiting an asio::awaitable<int> that returns at once: from a coral task (on
//                  the awaitable thread the task keeps) vs from an asio::awaitable.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "report.hpp"

namespace asio = boost::asio;

namespace {

coral::task<int> coral_value(int v) {
  co_return v;
}
asio::awaitable<int> asio_value(int v) {
  co_return v;
}

coral::task<long> coral_and_loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    auto [a, b] = co_await (coral_value(1) && coral_value(2));
    sum += a + b;
  }
  co_return sum;
}

asio::awaitable<long> asio_and_loop(long n) {
  using namespace asio::experimental::awaitable_operators;
  long sum = 0;
  for (long i = 0; i < n; ++i) {
    auto [a, b] = co_await (asio_value(1) && asio_value(2));
    sum += a + b;
  }
  co_return sum;
}

coral::task<long> coral_interop_loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += co_await asio_value(1);
  co_return sum;
}

asio::awaitable<long> asio_interop_loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += co_await asio_value(1);
  co_return sum;
}

template <class CoralLoop, class AsioLoop>
void compare(const char* name, long n, long expected, CoralLoop coral_loop, AsioLoop asio_loop) {
  long coral_sum = 0, asio_sum = 0;
  const double c = ns_per(n, [&] {
    asio::io_context ctx(1);
    auto j = coral::spawn(ctx, coral_loop(n));
    ctx.run();
    coral_sum = j.get_result();
  });
  const double a = ns_per(n, [&] {
    asio::io_context ctx(1);
    asio::co_spawn(ctx, asio_loop(n), [&](std::exception_ptr e, long v) {
      if (e) std::abort();
      asio_sum = v;
    });
    ctx.run();
  });
  check(coral_sum == expected && asio_sum == expected, name);
  report(name, c, a, "ns/op");
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 200'000;
  const std::string only = argc > 2 ? argv[2] : "";
  if (only.empty() || only == "operators_and") compare("operators_and", n, 3 * n, coral_and_loop, asio_and_loop);
  if (only.empty() || only == "interop_await") compare("interop_await", n, n, coral_interop_loop, asio_interop_loop);
  std::printf("summary: target operators_and <= 0.5, interop_await <= 3.0\n");
}
