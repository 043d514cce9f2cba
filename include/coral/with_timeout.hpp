#pragma once

#include <chrono>

#include "coral/error.hpp"
#include "coral/impl/join.hpp"
#include "coral/task.hpp"

namespace coral {

// `auto v = co_await with_timeout(250ms, fetch());` awaits a task, a join (`when_all(a(), b())`), a
// channel operation, a lock, a permit or an event wait (`with_timeout(50ms, m.lock())`: a
// try_lock_for) for at most the given time (counted from when the returned task starts). If the
// time runs out first, the operation — and everything it started: its children, its nested waits,
// whatever it starts later — is cancelled and awaited, then timeout_error is thrown (its message
// names the duration). Otherwise its result is returned, or its exception rethrown. A task that
// completes all the same (it was done before the cancellation reached it, or ended normally on it)
// has its result returned: a result is never dropped. A duration too long for the steady clock
// means no limit.
//
// Timeouts nest: the nearest deadline wins (an inner timeout surfaces as the inner
// timeout_error), whatever the order a loaded executor handles them in; a deadline counts once
// its with_timeout / with_deadline has started (an operation whose deadline had passed when
// its with_timeout began may not be started at all). Cancelling the awaiting task cancels the operation and surfaces as
// operation_aborted, never as timeout_error (even when the deadline passes while the
// cancellation is on its way).
//
// A channel operation is raced against the deadline as in when_any: `with_timeout(1s,
// ch.receive())` either receives a value or throws timeout_error having consumed none.
template <class Rep, class Period, detail::race_argument A>
CORAL_CORO_CONSUMING_WRAPPER auto with_timeout(std::chrono::duration<Rep, Period> timeout, A&& a);

// As with_timeout, with an absolute deadline on the steady clock.
template <detail::race_argument A>
CORAL_CORO_CONSUMING_WRAPPER auto with_deadline(std::chrono::steady_clock::time_point deadline, A&& a);

}  // namespace coral

#include "coral/impl/with_timeout.hpp"
