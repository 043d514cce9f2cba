#pragma once

#include <chrono>

#include "coral/detail/wait/sleep_awaiter.hpp"

namespace coral {

// `co_await sleep_for(d)` suspends the task for `d` on an asio::steady_timer of its executor; the
// task resumes on its executor. Cancelling the task ends the sleep early with
// boost::system::system_error(operation_aborted). Inside a task, `co_await d` does the same.
template <class Rep, class Period>
detail::sleep_awaiter sleep_for(std::chrono::duration<Rep, Period> d) {
  return detail::sleep_awaiter::after(d);
}

// As sleep_for, until a steady-clock time point.
template <class Duration>
detail::sleep_awaiter sleep_until(std::chrono::time_point<std::chrono::steady_clock, Duration> deadline) {
  return detail::sleep_awaiter(std::chrono::time_point_cast<std::chrono::steady_clock::duration>(deadline));
}

}  // namespace coral
