#pragma once

#include <cstdio>

// One line per case: `case=<name> coral=<value> asio=<value> unit=<unit> ratio=<coral/asio>`.
inline void report(const char* name, double coral, double asio, const char* unit) {
  std::printf("case=%s coral=%.3f asio=%.3f unit=%s ratio=%.3f\n", name, coral, asio, unit, coral / asio);
  std::fflush(stdout);
}
