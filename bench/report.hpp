#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

// One line per case: `case=<name> coral=<value> asio=<value> unit=<unit> ratio=<coral/asio>` (1
// where both are the same, zero included).
inline void report(const char* name, double coral, double asio, const char* unit) {
  std::printf("case=%s coral=%.3f asio=%.3f unit=%s ratio=%.3f\n", name, coral, asio, unit,
              coral == asio ? 1.0 : coral / asio);
  std::fflush(stdout);
}

// Nanoseconds per operation of run(), which does n operations.
template <class F>
double ns_per(long n, F run) {
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / n;
}

// A benchmark that computed the wrong thing measured nothing: stop.
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "benchmark self-check failed: %s\n", what);
    std::abort();
  }
}
