#pragma once

#include <chrono>
#include <coroutine>
#include <optional>

#include "coral/detail/asio.hpp"
#include "coral/detail/resuming_handler.hpp"
#include "coral/detail/task_root.hpp"

namespace coral::detail {

// Suspends until a steady-clock deadline on an asio::steady_timer bound to the task's executor.
// Cancelling the task cancels the wait (operation_aborted).
class sleep_awaiter {
 public:
  using coral_awaitable = void;
  explicit sleep_awaiter(std::chrono::steady_clock::time_point deadline) noexcept : deadline_(deadline) {}

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    task_context& context = coroutine.promise().context();
    if (context.root->cancel_requested()) {
      results_.emplace(asio::error::operation_aborted);
      return false;
    }
    timer_.emplace(context.executor, deadline_);
    timer_->async_wait(handler(results_, coroutine, context));
    return true;
  }

  void await_resume() const {
    if (auto error = std::get<0>(*results_)) throw boost::system::system_error(error, "coral: sleep");
  }

 private:
  using handler = resuming_handler<boost::system::error_code>;
  std::chrono::steady_clock::time_point deadline_;
  std::optional<asio::steady_timer> timer_;
  handler::results_type results_;
};

}  // namespace coral::detail
