#pragma once

#include <vector>

#include "coral/impl/join.hpp"
#include "coral/task.hpp"

namespace coral {

// `auto [a, b] = co_await when_all(x(), y());` runs the tasks concurrently, as children of the
// awaiting task, and resumes it (on its own executor) once every one has ended, with their
// results by position (a `void` result is std::monostate).
//
// - Arguments are tasks or coral awaitables (`ch.receive()`, `ch.send(v)`, `sleep_for(d)`, a
//   duration...); an awaitable is awaited by a task of its own.
// - A task runs on its bound executor type, else on the awaiting task's executor; children on
//   the awaiting task's executor start on the spot, one after the other, up to their first
//   suspension.
// - The first child to fail cancels its siblings; once they have all ended its exception is
//   rethrown (the siblings' outcomes are dropped, not reported as unobserved).
// - Cancelling the awaiting task cancels every child; the children are still awaited, and the
//   first failure (typically operation_aborted) is rethrown.
// - If the awaiting task's execution context shuts down meanwhile, the children are cancelled
//   and the awaiting task's frames are destroyed with the context.
template <detail::join_argument... A>
auto when_all(A&&... a);

// `std::vector<T> v = co_await when_all(std::move(tasks));` as above, for a vector of tasks
// (results in the vector's order; an empty vector completes at once with an empty result).
// For `task<void>` the result is a std::vector<std::monostate> of the same size.
template <class T, class E>
auto when_all(std::vector<task<T, E>> tasks);

}  // namespace coral

#include "coral/impl/when_all.hpp"
