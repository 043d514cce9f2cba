#pragma once

#include <chrono>
#include <coroutine>
#include <memory>
#include <optional>
#include <variant>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/wait/deadline.hpp"
#include "coral/detail/wait/race.hpp"
#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

// A steady timer on the execution context of an executor. On an io_context (the common case) it
// is typed on that context's executor: smaller, and so is Asio's wait operation. Any other
// executor gets a general steady_timer. Bound to the executor under a strand: it holds no strand.
class context_timer {
 public:
  context_timer(const asio::any_io_executor& executor, std::chrono::steady_clock::time_point deadline) {
    if (auto io = io_context_executor_of(executor)) {
      timer_.emplace<io_timer>(*io, deadline);
    } else {
      timer_.emplace<std::unique_ptr<asio::steady_timer>>(
          std::make_unique<asio::steady_timer>(inner_executor_of(executor), deadline));
    }
  }

  template <class Handler>
  void async_wait(Handler&& handler) {
    if (auto* io = std::get_if<io_timer>(&timer_)) {
      io->async_wait(std::forward<Handler>(handler));
    } else {
      std::get<2>(timer_)->async_wait(std::forward<Handler>(handler));
    }
  }

  // (A pending wait completes as cancelled.)
  void expires_at(std::chrono::steady_clock::time_point deadline) {
    if (auto* io = std::get_if<io_timer>(&timer_)) {
      io->expires_at(deadline);
    } else {
      std::get<2>(timer_)->expires_at(deadline);
    }
  }

  void cancel() {
    if (auto* io = std::get_if<io_timer>(&timer_)) {
      io->cancel();
    } else {
      std::get<2>(timer_)->cancel();
    }
  }

 private:
  using io_timer = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                              asio::io_context::executor_type>;
  std::variant<std::monostate, io_timer, std::unique_ptr<asio::steady_timer>> timer_;
};

// Suspends until a steady-clock deadline on a timer of the task's execution context.
// Cancelling the task cancels the wait (operation_aborted).
class sleep_awaiter {
 public:
  using coral_awaitable = void;
  explicit sleep_awaiter(std::chrono::steady_clock::time_point deadline) noexcept : deadline_(deadline) {}
  template <class Rep, class Period>
  static sleep_awaiter after(std::chrono::duration<Rep, Period> d) {
    return sleep_awaiter(deadline_after(clock_duration(d)));
  }

  bool await_ready() const noexcept { return false; }

  static constexpr wait_kind coral_wait_kind() noexcept { return wait_kind::sleep; }
  std::int64_t coral_wait_detail() const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(deadline_.time_since_epoch()).count();
  }

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
    timer_.emplace(task.segment().executor(), deadline_).async_wait(handler(results_, std::move(task)));
  }

  void await_resume() const {
    if (auto error = std::get<0>(*results_)) throw boost::system::system_error(error, "coral: sleep");
  }

 protected:
  boost::system::error_code error() const noexcept { return std::get<0>(*results_); }

 private:
  using handler = task_completion_handler<boost::system::error_code>;

  std::chrono::steady_clock::time_point deadline_;
  std::optional<context_timer> timer_;
  handler::results_type results_;
};

}  // namespace coral::detail
