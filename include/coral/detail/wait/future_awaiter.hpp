#pragma once

#include <algorithm>
#include <chrono>
#include <coroutine>
#include <future>
#include <optional>

#include "coral/detail/core/executors.hpp"
#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

// std::future offers no completion callback, and coral spends no thread per await, so the task
// checks the future on a steady_timer of its own executor, backing off from 50 us to 5 ms between
// checks. No thread blocks; a wake-up comes at most 5 ms after the value is ready.
template <class R>
class future_awaiter {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::future; }
  static constexpr std::chrono::microseconds first_delay{50};
  static constexpr std::chrono::microseconds max_delay{5000};

  explicit future_awaiter(std::future<R> future) : future_(std::move(future)) {
    if (!future_.valid()) throw std::future_error(std::future_errc::no_state);
  }

  // A ready future is still a suspension point: cancellation is checked first.
  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    suspended_task task;
    task.suspend(coroutine);
    if (ready()) return false;
    timer_.emplace(inner_executor_of(task.segment().executor()));
    arm(poll_handler{this, std::move(task)});
    return true;
  }

  R await_resume() {
    if (error_) throw boost::system::system_error(error_, "coral: waiting for a future");
    return future_.get();
  }

 private:
  struct poll_handler {
    using executor_type = asio::any_io_executor;
    using cancellation_slot_type = asio::cancellation_slot;
    executor_type get_executor() const noexcept { return task.segment().executor(); }
    cancellation_slot_type get_cancellation_slot() const noexcept { return task.segment().op_slot(); }

    // Cancellation is checked at every poll too: a cancel that lands between the timer's expiry
    // and this handler found no wait to abort.
    void operator()(boost::system::error_code error) {
      task_segment& segment = task.segment();
      if (!error && segment.cancelled()) error = asio::error::operation_aborted;
      if (!error && !self->ready()) {
        self->arm(std::move(*this));
        return;
      }
      segment.slot().clear();
      self->error_ = error;
      task.resume_here();
    }

    future_awaiter* self;
    suspended_task task;
  };

  bool ready() const { return future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

  void arm(poll_handler handler) {
    timer_->expires_after(delay_);
    delay_ = std::min(delay_ * 2, max_delay);
    timer_->async_wait(std::move(handler));
  }

  std::future<R> future_;
  std::optional<asio::steady_timer> timer_;
  std::chrono::microseconds delay_ = first_delay;
  boost::system::error_code error_;
};

}  // namespace coral::detail
