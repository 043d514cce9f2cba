#pragma once

#include <coroutine>

#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

struct yield_awaiter {
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::yield; }
  task_segment* segment = nullptr;

  bool await_ready() const noexcept { return false; }
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    suspended_task task;
    task.suspend(coroutine);
    segment = &task.segment();
    task.resume_soon();
  }
  void await_resume() const { segment->throw_if_cancelled(); }
};

}  // namespace coral::detail
