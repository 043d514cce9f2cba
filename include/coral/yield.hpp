#pragma once

#include <coroutine>

#include "coral/detail/suspended_task.hpp"

namespace coral {

namespace detail {
struct yield_awaiter {
  using coral_awaitable = void;
  task_context* context = nullptr;

  bool await_ready() const noexcept { return false; }
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    suspended_task task;
    task.suspend(coroutine);
    context = &task.context();
    task.resume_soon();
  }
  void await_resume() const { context->throw_if_cancelled(); }
};
}  // namespace detail

// `co_await yield();` puts the task at the back of its executor's queue, letting other work run.
// Like every suspension point it fails with operation_aborted once the task is cancelled (before
// or while it waits in the queue).
inline detail::yield_awaiter yield() noexcept {
  return {};
}

}  // namespace coral
