// async_generator_next: 1M `co_await gen.next()` on a coral::async_generator<int> whose body yields
// without suspending, summed by a coral task, against Boost 1.81's async generator,
// asio::experimental::coro<int>, pulled with `co_await gen` by an experimental::coro consumer.
// Both on a single-threaded io_context; best of 3 runs.
#include <algorithm>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/co_spawn.hpp>
#include <boost/asio/experimental/coro.hpp>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>

#include "report.hpp"

namespace asio = boost::asio;

namespace {

coral::async_generator<int> coral_count(int n) {
  for (int i = 0; i < n; ++i) co_yield i;
}

coral::task<long> coral_sum(int n) {
  auto g = coral_count(n);
  long sum = 0;
  while (auto v = co_await g.next()) sum += *v;
  co_return sum;
}

asio::experimental::coro<int> asio_count(asio::any_io_executor, int n) {
  for (int i = 0; i < n; ++i) co_yield i;
}

asio::experimental::coro<void, long> asio_sum(asio::any_io_executor ex, int n) {
  auto g = asio_count(ex, n);
  long sum = 0;
  while (auto v = co_await g) sum += *v;
  co_return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1'000'000;
  const long expected = long(n) * (n - 1) / 2;
  double coral = 1e300, asio_way = 1e300;
  for (int round = 0; round < 3; ++round) {
    coral = std::min(coral, ns_per(n, [&] {
                       asio::io_context ctx(1);
                       auto j = coral::spawn(ctx, coral_sum(n));
                       ctx.run();
                       check(j.get_result() == expected, "coral sum");
                     }));
    asio_way =
        std::min(asio_way, ns_per(n, [&] {
                   asio::io_context ctx(1);
                   long sum = 0;
                   asio::experimental::co_spawn(asio_sum(ctx.get_executor(), n), [&](std::exception_ptr e, long s) {
                     if (e) std::abort();
                     sum = s;
                   });
                   ctx.run();
                   check(sum == expected, "asio sum");
                 }));
  }
  report("async_generator_next", coral, asio_way, "ns/value");
  std::printf("summary: target async_generator_next <= 0.5\n");
}
