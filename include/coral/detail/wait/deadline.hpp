#pragma once

#include <chrono>

namespace coral::detail {

// A duration as the steady clock counts it, rounded up and saturated: a duration too long for the
// clock (hours::max(), a limit read from a command line) means "never", as it does to Asio's timers,
// instead of wrapping around to a deadline in the past.
template <class Rep, class Period>
constexpr std::chrono::steady_clock::duration clock_duration(std::chrono::duration<Rep, Period> d) {
  using target = std::chrono::steady_clock::duration;
  using wide = std::chrono::duration<long double>;  // compares any two durations without overflow
  if (wide(d) >= wide(target::max())) return target::max();
  if (wide(d) <= wide(target::min())) return target::min();
  return std::chrono::ceil<target>(d);
}

// Now plus `d`, saturated at the end of the clock (never).
inline std::chrono::steady_clock::time_point deadline_after(std::chrono::steady_clock::duration d) noexcept {
  using clock = std::chrono::steady_clock;
  const auto now = clock::now();
  // (now is after the clock's epoch, so only a positive `d` can overflow)
  if (d > clock::time_point::max() - now) return clock::time_point::max();
  return now + d;
}

}  // namespace coral::detail
