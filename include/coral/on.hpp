#pragma once

#include "coral/task.hpp"

namespace coral {

// `co_await on(ex, child())` runs the child on `ex` (an executor or an execution context), then
// resumes the awaiting task on its own executor. The child's exception propagates as usual and
// cancelling the awaiting task cancels the child.
template <class Executor, class T, class E>
detail::task_on_awaiter<T> on(Executor&& executor, task<T, E> child) {
  if constexpr (requires { executor.get_executor(); }) {
    return detail::task_on_awaiter<T>(child.release(), executor.get_executor());
  } else {
    return detail::task_on_awaiter<T>(child.release(), executor);
  }
}

}  // namespace coral
