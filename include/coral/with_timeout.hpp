#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <variant>

#include "coral/detail/join_awaiter.hpp"
#include "coral/error.hpp"
#include "coral/sleep.hpp"
#include "coral/task.hpp"
#include "coral/when_any.hpp"

namespace coral {

// `auto v = co_await with_timeout(250ms, fetch());` awaits a task or coral awaitable for at most
// the given time (counted from when the returned task starts). If the time runs out first, the
// operation — and everything it started: its children, its nested waits, whatever it starts
// later — is cancelled and awaited, then timeout_error is thrown (its message names the
// duration). Otherwise its result is returned, or its exception rethrown.
//
// Timeouts nest: the nearest deadline wins (an inner timeout surfaces as the inner
// timeout_error). Cancelling the awaiting task cancels the operation and surfaces as
// operation_aborted, never as timeout_error.
template <class Rep, class Period, detail::join_argument A>
auto with_timeout(std::chrono::duration<Rep, Period> timeout, A&& a);

// As with_timeout, with an absolute deadline on the steady clock.
template <detail::join_argument A>
auto with_deadline(std::chrono::steady_clock::time_point deadline, A&& a);

namespace detail {

std::string describe_duration(std::chrono::nanoseconds d);

// True if the deadline passed, false if the timer was cancelled (the operation ended first): a
// cancelled timer is the common case, so it is not an exception.
inline task<bool> deadline_timer(std::chrono::steady_clock::time_point deadline) {
  co_return !co_await sleep_outcome_awaiter(deadline);
}

template <class T, class Task>
task<T> run_with_deadline(Task operation, std::chrono::steady_clock::time_point deadline, std::string timeout_message) {
  auto outcome = co_await when_any(std::move(operation), deadline_timer(deadline));
  if (outcome.index() == 1 && std::get<1>(outcome)) throw timeout_error(timeout_message);
  // The timer cannot win without expiring unless the awaiting task was cancelled.
  if (outcome.index() == 1) task_context::throw_cancelled();
  if constexpr (!std::is_void_v<T>) co_return std::get<0>(std::move(outcome));
}

// The deadline is fixed when the task starts, not when it is created.
template <class T, class Task>
task<T> run_with_timeout(Task operation, std::chrono::steady_clock::duration timeout) {
  co_return co_await run_with_deadline<T>(
      std::move(operation), std::chrono::steady_clock::now() + timeout,
      "coral::with_timeout: the operation did not finish within " + describe_duration(timeout));
}

}  // namespace detail

template <class Rep, class Period, detail::join_argument A>
auto with_timeout(std::chrono::duration<Rep, Period> timeout, A&& a) {
  using T = typename detail::join_task_t<A>::value_type;
  return detail::run_with_timeout<T>(detail::as_join_task(std::forward<A>(a)),
                                     std::chrono::ceil<std::chrono::steady_clock::duration>(timeout));
}

template <detail::join_argument A>
auto with_deadline(std::chrono::steady_clock::time_point deadline, A&& a) {
  using T = typename detail::join_task_t<A>::value_type;
  return detail::run_with_deadline<T>(detail::as_join_task(std::forward<A>(a)), deadline,
                                      "coral::with_deadline: the operation did not finish by its deadline");
}

}  // namespace coral
