// Generator benchmarks. Here the "asio" column holds the established non-coral way of doing the
// same work, measured in the same run (Asio has no synchronous generator):
//   generator_sum           summing 10M ints from a coral::generator<int> with fold (a terminal
//                           operation), against a Boost.Coroutine2 pull_type generator (stackful,
//                           Boost.Context) summed with range-for. Needs Boost.Context
//                           (libboost-context1.81-dev, installed by scripts/bench.sh); without it
//                           the case is skipped. The plain loop's figure is printed for reference:
//                           the floor, one value at a time without any coroutine.
//   generator_sum_range_for the same, coral consumed with range-for (a resume per value).
//   generator_pipeline      filter -> map -> take over 10M source values, consumed with range-for:
//                           coral::generator transforms against the same std::views over an iota.
//   generator_pipeline_fold the same, coral consumed with fold (against the same views loop).
#include <chrono>
#include <coral/generator.hpp>
#include <cstdio>
#include <cstdlib>
#include <ranges>

#include "report.hpp"

#ifdef CORAL_BENCH_HAVE_COROUTINE2
// Boost.Coroutine2 1.81 trips g++ 12's -Wmaybe-uninitialized in its own headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/coroutine2/coroutine.hpp>
#pragma GCC diagnostic pop
#endif

namespace {

coral::generator<int> count(int n) {
  for (int i = 0; i < n; ++i) co_yield i;
}

// ---- generator_sum
double coral_sum(int n) {
  return ns_per(n, [&] {
    long total = count(n).fold(0L, [](long acc, int v) { return acc + v; });
    check(total == long(n) * (n - 1) / 2, "coral sum");
  });
}

double coral_sum_range_for(int n) {
  return ns_per(n, [&] {
    long total = 0;
    for (int v : count(n)) total += v;
    check(total == long(n) * (n - 1) / 2, "coral sum");
  });
}

#ifdef CORAL_BENCH_HAVE_COROUTINE2
double coroutine2_sum(int n) {
  using coroutine = boost::coroutines2::coroutine<int>;
  return ns_per(n, [&] {
    coroutine::pull_type source([n](coroutine::push_type& sink) {
      for (int i = 0; i < n; ++i) sink(i);
    });
    long total = 0;
    for (int v : source) total += v;
    check(total == long(n) * (n - 1) / 2, "coroutine2 sum");
  });
}
#endif

double plain_loop_sum(int n) {
  return ns_per(n, [&] {
    long total = 0;
    for (int i = 0; i < n; ++i) {
      asm volatile("" : "+r"(i));  // one value at a time: no vectorising, no closed form
      total += i;
    }
    check(total == long(n) * (n - 1) / 2, "plain loop sum");
  });
}

// ---- generator_pipeline: the even values, times 3, the first n / 2 of them (all of them).
long pipeline_expected(int n) {
  return 3L * 2 * (long(n / 2) * (n / 2 - 1) / 2);
}

double coral_pipeline(int n) {
  return ns_per(n, [&] {
    long total = 0;
    for (long v : count(n).filter([](int x) { return x % 2 == 0; }).map([](int x) { return 3L * x; }).take(n / 2)) {
      total += v;
    }
    check(total == pipeline_expected(n), "coral pipeline");
  });
}

double coral_pipeline_fold(int n) {
  return ns_per(n, [&] {
    long total = count(n)
                     .filter([](int x) { return x % 2 == 0; })
                     .map([](int x) { return 3L * x; })
                     .take(n / 2)
                     .fold(0L, [](long acc, long v) { return acc + v; });
    check(total == pipeline_expected(n), "coral pipeline fold");
  });
}

double views_pipeline(int n) {
  return ns_per(n, [&] {
    long total = 0;
    for (long v : std::views::iota(0, n) | std::views::filter([](int x) { return x % 2 == 0; }) |
                      std::views::transform([](int x) { return 3L * x; }) | std::views::take(n / 2)) {
      total += v;
    }
    check(total == pipeline_expected(n), "views pipeline");
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10'000'000;
  const int rounds = 3;  // best of: the machines are shared and noisy

  double coral_fold = 1e300, coral_for = 1e300, floor = 1e300, coral_pipe = 1e300, coral_pipe_fold = 1e300,
         views_pipe = 1e300;
#ifdef CORAL_BENCH_HAVE_COROUTINE2
  double coroutine2 = 1e300;
#endif
  for (int r = 0; r < rounds; ++r) {
    coral_fold = std::min(coral_fold, coral_sum(n));
    coral_for = std::min(coral_for, coral_sum_range_for(n));
#ifdef CORAL_BENCH_HAVE_COROUTINE2
    coroutine2 = std::min(coroutine2, coroutine2_sum(n));
#endif
    floor = std::min(floor, plain_loop_sum(n));
    coral_pipe = std::min(coral_pipe, coral_pipeline(n));
    coral_pipe_fold = std::min(coral_pipe_fold, coral_pipeline_fold(n));
    views_pipe = std::min(views_pipe, views_pipeline(n));
  }
#ifdef CORAL_BENCH_HAVE_COROUTINE2
  report("generator_sum", coral_fold, coroutine2, "ns/value");
  report("generator_sum_range_for", coral_for, coroutine2, "ns/value");
#else
  std::printf("generator_sum: skipped (Boost.Context not found; scripts/bench.sh installs libboost-context1.81-dev)\n");
#endif
  report("generator_pipeline", coral_pipe, views_pipe, "ns/value");
  report("generator_pipeline_fold", coral_pipe_fold, views_pipe, "ns/value");
  std::printf("reference: plain loop sum %.3f ns/value (the floor); coral fold %.3f, range-for %.3f ns/value\n", floor,
              coral_fold, coral_for);
#ifdef CORAL_BENCH_HAVE_COROUTINE2
  std::printf(
      "summary: generator_sum ratio=%.3f (target <= 0.2), range-for ratio=%.3f, generator_pipeline ratio=%.3f\n",
      coral_fold / coroutine2, coral_for / coroutine2, coral_pipe / views_pipe);
#else
  std::printf("summary: generator_pipeline ratio=%.3f\n", coral_pipe / views_pipe);
#endif
}
