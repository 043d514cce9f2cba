#pragma once

#include <chrono>
#include <coroutine>
#include <memory>
#include <optional>
#include <variant>

#include "coral/detail/asio.hpp"
#include "coral/detail/executors.hpp"
#include "coral/detail/suspended_task.hpp"

namespace coral::detail {

// Suspends until a steady-clock deadline on an asio::steady_timer of the task's executor.
// Cancelling the task cancels the wait (operation_aborted).
class sleep_awaiter {
 public:
  using coral_awaitable = void;
  explicit sleep_awaiter(std::chrono::steady_clock::time_point deadline) noexcept : deadline_(deadline) {}
  template <class Rep, class Period>
  static sleep_awaiter after(std::chrono::duration<Rep, Period> d) {
    return sleep_awaiter(std::chrono::steady_clock::now() + std::chrono::ceil<std::chrono::steady_clock::duration>(d));
  }

  bool await_ready() const noexcept { return false; }

  // A sleep may be raced in when_any (`when_any(ch.receive(), sleep_for(1s))`): losing, it has
  // done nothing.
  void enter_race(race_ticket) noexcept {}
  // After the wait, instead of await_resume(): true if it was cancelled (nothing to rethrow for a
  // branch that lost its race).
  bool lost_race() const noexcept { return error() == asio::error::operation_aborted; }

  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    suspended_task task;
    task.suspend(coroutine);
    const auto& executor = task.context().executor();
    // On an io_context (the common case) the timer is typed on its executor: smaller in the
    // frame, and so is Asio's wait operation. Any other executor gets a general steady_timer.
    if (auto io = io_context_executor_of(executor)) {
      timer_.emplace<io_timer>(*io, deadline_).async_wait(handler(results_, std::move(task)));
    } else {
      timer_.emplace<std::unique_ptr<asio::steady_timer>>(
          std::make_unique<asio::steady_timer>(inner_executor_of(executor), deadline_));
      std::get<2>(timer_)->async_wait(handler(results_, std::move(task)));
    }
  }

  void await_resume() const {
    if (auto error = std::get<0>(*results_)) throw boost::system::system_error(error, "coral: sleep");
  }

 protected:
  boost::system::error_code error() const noexcept { return std::get<0>(*results_); }

 private:
  using handler = resuming_handler<boost::system::error_code>;
  using io_timer = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                              asio::io_context::executor_type>;

  std::chrono::steady_clock::time_point deadline_;
  std::variant<std::monostate, io_timer, std::unique_ptr<asio::steady_timer>> timer_;
  handler::results_type results_;
};

// As sleep_awaiter, but the outcome is returned (operation_aborted when cancelled), not thrown:
// for timers inside coral whose cancellation is the normal case (with_timeout's).
class sleep_outcome_awaiter : public sleep_awaiter {
 public:
  using sleep_awaiter::sleep_awaiter;
  boost::system::error_code await_resume() const noexcept { return error(); }
};

}  // namespace coral::detail
