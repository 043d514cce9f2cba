#pragma once

#include <chrono>
#include <coroutine>
#include <memory>
#include <optional>
#include <variant>

#include "coral/detail/asio.hpp"
#include "coral/detail/resuming_handler.hpp"
#include "coral/detail/task_root.hpp"
#include "coral/loop_executor.hpp"

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
    // On an io_context (the common case) the timer is typed on its executor: smaller in the
    // frame, and so is Asio's wait operation. Any other executor gets a general steady_timer.
    if (auto* io = context.executor.target<asio::io_context::executor_type>()) {
      wait(timer_.emplace<io_timer>(*io, deadline_), coroutine, context);
    } else if (auto* loop = context.executor.target<loop_executor>()) {
      wait(timer_.emplace<io_timer>(*loop, deadline_), coroutine, context);
    } else {
      wait(*timer_.emplace<std::unique_ptr<asio::steady_timer>>(
               std::make_unique<asio::steady_timer>(context.executor, deadline_)),
           coroutine, context);
    }
    return true;
  }

  void await_resume() const {
    if (auto error = std::get<0>(*results_)) throw boost::system::system_error(error, "coral: sleep");
  }

 private:
  using handler = resuming_handler<boost::system::error_code>;
  using io_timer = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                              asio::io_context::executor_type>;

  template <class Timer>
  void wait(Timer& timer, std::coroutine_handle<> coroutine, task_context& context) {
    timer.async_wait(handler(results_, coroutine, context));
  }

  std::chrono::steady_clock::time_point deadline_;
  std::variant<std::monostate, io_timer, std::unique_ptr<asio::steady_timer>> timer_;
  handler::results_type results_;
};

}  // namespace coral::detail
