#pragma once

#include <vector>

#include "coral/impl/join.hpp"
#include "coral/task.hpp"

namespace coral {

// `auto r = co_await when_any(x(), y());` runs the tasks concurrently, as children of the
// awaiting task; the first to *end* wins, whether with a value or an exception. The others are
// cancelled and awaited, then the awaiting task resumes (on its own executor) with the winner's
// result as a std::variant by position (`r.index()` says which; a `void` result is
// std::monostate), or the winner's exception is rethrown. Losers finish at once: their waits end
// with operation_aborted as soon as they are cancelled (no waiting for a timer to expire).
//
// - Arguments are tasks, durations (`when_any(work(), 5s)`: the index says whether the work or
//   the sleep ended first), channel operations (`ch.receive()`, `ch.send(v)`, `ch.next()`) and
//   joins (`when_any(when_all(a(), b()), 5s)`: a join that loses is cancelled as a task is).
//   Tasks run on their bound executor type, else on the awaiting task's executor.
// - A select is lossless: at most one channel operation among the arguments happens, the
//   winner's. A losing receive consumed no value (it is still in its channel, or went to another
//   receiver) and makes none (its T need not be default-constructible); a losing send delivered
//   none (the value is dropped with the awaiter, never received). Rule: an operation that ends with operation_aborted
//   did not happen. Channel operations that can happen at once are tried first (see select_awaiter).
// - Cancelling the awaiting task cancels every child; the first to end then typically ends with
//   operation_aborted, which is rethrown.
// - If the awaiting task's execution context shuts down meanwhile, the children are cancelled
//   and the awaiting task's frames are destroyed with the context.
// - A losing task may already have done part of its work before it was cancelled (a loser that
//   received from a channel inside its body has consumed that value): race the channel
//   operation itself, not a task around it. m.lock(), sem.acquire() and ev.wait() race as channel
//   operations do: one that lost holds no lock, took no permit, consumed nothing; one that won
//   is held as `co_await` of it holds it (m.lock(): by the task, which unlocks by hand;
//   m.scoped_lock(): by the guard it yields). A task that takes a lock inside
//   its body is not lossless that way.
template <detail::race_argument... A>
requires(sizeof...(A) > 0) auto when_any(A&&... a);

// `auto [index, value] = co_await when_any(std::move(tasks));` as above, for a vector of tasks:
// the winner's index and result (std::monostate for `task<void>`). An empty vector throws
// std::invalid_argument.
template <class T, class E>
auto when_any(std::vector<task<T, E>> tasks);

}  // namespace coral

#include "coral/impl/when_any.hpp"
