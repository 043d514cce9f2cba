#pragma once

#include "coral/detail/core/executors.hpp"
#include "coral/task.hpp"

namespace coral {

// `co_await on(ex, child())` runs the child on `ex` (an executor or an execution context), then
// resumes the awaiting task on its own executor. The child's exception propagates as usual and
// cancelling the awaiting task cancels the child.
template <class Executor, class T, class E>
detail::task_on_awaiter<T> on(Executor&& executor, task<T, E> child) {
  return detail::task_on_awaiter<T>(child.release(), detail::erase_executor(detail::executor_of(executor)));
}

}  // namespace coral
