#pragma once

// The await_immediate workload, shared by bench_core (time) and await_instructions
// (instruction counts): n awaits of a child that completes without suspending, on each side.
#include <boost/asio/awaitable.hpp>
#include <coral/task.hpp>

namespace await_workload {

// Keeps the optimiser from folding the loop away.
inline int opaque_one = 1;

inline coral::task<int> coral_child() {
  co_return opaque_one;
}
inline coral::task<long> coral_loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += co_await coral_child();
  co_return sum;
}

inline boost::asio::awaitable<int> asio_child() {
  co_return opaque_one;
}
inline boost::asio::awaitable<long> asio_loop(long n) {
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += co_await asio_child();
  co_return sum;
}

}  // namespace await_workload
