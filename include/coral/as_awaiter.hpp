#pragma once

#include <algorithm>
#include <chrono>
#include <coroutine>
#include <future>
#include <optional>

#include "coral/detail/task_root.hpp"

namespace coral {

namespace detail {

// std::future offers no completion callback, and coral spends no thread per await, so the task
// checks the future on a steady_timer of its own executor, backing off from 50 us to 5 ms between
// checks. No thread blocks; a wake-up comes at most 5 ms after the value is ready.
template <class R>
class future_awaiter {
 public:
  using coral_awaitable = void;
  static constexpr std::chrono::microseconds first_delay{50};
  static constexpr std::chrono::microseconds max_delay{5000};

  explicit future_awaiter(std::future<R> future) : future_(std::move(future)) {
    if (!future_.valid()) throw std::future_error(std::future_errc::no_state);
  }

  bool await_ready() const { return ready(); }

  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    task_context& context = coroutine.promise().context();
    throw_if_cancelled(context);
    timer_.emplace(context.executor);
    arm(poll_handler{this, coroutine, &context, keep_alive(context.root)});
  }

  R await_resume() {
    if (error_) throw boost::system::system_error(error_, "coral: waiting for a future");
    return future_.get();
  }

 private:
  struct poll_handler {
    using executor_type = asio::any_io_executor;
    using cancellation_slot_type = asio::cancellation_slot;
    executor_type get_executor() const noexcept { return context->executor; }
    cancellation_slot_type get_cancellation_slot() const noexcept { return context->root->cancellation_slot(); }

    void operator()(boost::system::error_code error) {
      if (!error && !self->ready()) {
        self->arm(std::move(*this));
        return;
      }
      if (context->slot.is_connected()) context->slot.clear();
      self->error_ = error;
      auto k = std::move(keep);
      coroutine.resume();
    }

    future_awaiter* self;
    std::coroutine_handle<> coroutine;
    task_context* context;
    keep_alive keep;
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

}  // namespace detail

// `co_await as_awaiter(std::move(future))` waits for a std::future inside a task without blocking
// a thread, and resumes the task on its executor.
template <class R>
detail::future_awaiter<R> as_awaiter(std::future<R> future) {
  return detail::future_awaiter<R>(std::move(future));
}

}  // namespace coral
