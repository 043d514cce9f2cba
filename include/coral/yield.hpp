#pragma once

#include <coroutine>

#include "coral/detail/task_root.hpp"

namespace coral {

namespace detail {
struct yield_awaiter {
  using coral_awaitable = void;
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) const {
    task_context& context = coroutine.promise().context();
    asio::post(context.executor, resume_handler{coroutine, keep_alive(context.root)});
  }
  void await_resume() const noexcept {}
};
}  // namespace detail

// `co_await yield();` puts the task at the back of its executor's queue, letting other work run.
inline detail::yield_awaiter yield() noexcept {
  return {};
}

}  // namespace coral
