#pragma once

#include <chrono>
#include <utility>
#include <variant>

#include "coral/detail/join_awaiter.hpp"
#include "coral/error.hpp"
#include "coral/sleep.hpp"
#include "coral/task.hpp"
#include "coral/when_any.hpp"

namespace coral {

// `auto v = co_await with_timeout(250ms, fetch());` awaits a task or a channel operation for at most
// the given time (counted from when the returned task starts). If the time runs out first, the
// operation — and everything it started: its children, its nested waits, whatever it starts
// later — is cancelled and awaited, then timeout_error is thrown (its message names the
// duration). Otherwise its result is returned, or its exception rethrown.
//
// Timeouts nest: the nearest deadline wins (an inner timeout surfaces as the inner
// timeout_error). Cancelling the awaiting task cancels the operation and surfaces as
// operation_aborted, never as timeout_error (even when the deadline passes while the
// cancellation is on its way).
//
// A channel operation is raced against the deadline as in when_any: `with_timeout(1s,
// ch.receive())` either receives a value or throws timeout_error having consumed none.
template <class Rep, class Period, detail::race_argument A>
auto with_timeout(std::chrono::duration<Rep, Period> timeout, A&& a);

// As with_timeout, with an absolute deadline on the steady clock.
template <detail::race_argument A>
auto with_deadline(std::chrono::steady_clock::time_point deadline, A&& a);

namespace detail {

// True if the deadline passed, false if the timer was cancelled (the operation ended first): a
// cancelled timer is the common case, so it is not an exception.
inline task<bool> deadline_timer(std::chrono::steady_clock::time_point deadline) {
  co_return !co_await sleep_outcome_awaiter(deadline);
}

[[noreturn]] void throw_timeout(const std::chrono::steady_clock::duration* timeout);

// `limit`: a duration (the deadline is fixed when the task starts, not when it is created) or a
// time point. The timeout message is only built if it is thrown.
template <class T, class Task, class Limit>
task<T> run_timed(Task operation, Limit limit) {
  std::chrono::steady_clock::time_point deadline;
  if constexpr (std::is_same_v<Limit, std::chrono::steady_clock::duration>) {
    deadline = std::chrono::steady_clock::now() + limit;
  } else {
    deadline = limit;
  }
  auto outcome = co_await when_any(std::move(operation), deadline_timer(deadline));
  if (outcome.index() == 1) {
    // The timer cannot win without expiring unless the awaiting task was cancelled; and if the
    // task was cancelled before its cancellation reached the timer, that is what it hears.
    task_context& self = co_await current_segment{};
    if (!std::get<1>(outcome) || self.cancelled()) task_context::throw_cancelled();
    if constexpr (std::is_same_v<Limit, std::chrono::steady_clock::duration>) {
      throw_timeout(&limit);
    } else {
      throw_timeout(nullptr);
    }
  }
  if constexpr (!std::is_void_v<T>) co_return std::get<0>(std::move(outcome));
}

}  // namespace detail

template <class Rep, class Period, detail::race_argument A>
auto with_timeout(std::chrono::duration<Rep, Period> timeout, A&& a) {
  using T = typename detail::join_task_t<A>::value_type;
  return detail::run_timed<T>(detail::as_join_task(std::forward<A>(a)),
                              std::chrono::ceil<std::chrono::steady_clock::duration>(timeout));
}

template <detail::race_argument A>
auto with_deadline(std::chrono::steady_clock::time_point deadline, A&& a) {
  using T = typename detail::join_task_t<A>::value_type;
  return detail::run_timed<T>(detail::as_join_task(std::forward<A>(a)), deadline);
}

}  // namespace coral
