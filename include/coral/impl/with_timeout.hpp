#pragma once

// The rest of with_timeout.hpp (which includes this at its end): the awaiters and the definitions.

#include <chrono>
#include <utility>
#include <variant>

#include "coral/detail/wait/deadline.hpp"
#include "coral/detail/wait/deadline_watch.hpp"
#include "coral/error.hpp"
#include "coral/impl/join.hpp"
#include "coral/sleep.hpp"
#include "coral/task.hpp"
#include "coral/when_any.hpp"

namespace coral {

namespace detail {

[[noreturn]] void throw_timeout(const std::chrono::steady_clock::duration* timeout,
                                std::chrono::steady_clock::time_point deadline);

// The deadline a timeout that ended an operation was for, as a cancel cause: the earliest
// possible one if it is not known (a timeout the operation threw itself, which came first).
inline cancel_cause inner_timeout_cause(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const timeout_error& error) {
    if (error.deadline() != std::chrono::steady_clock::time_point::min()) return deadline_cause(error.deadline());
  } catch (...) {
  }
  return not_a_deadline + 1;
}

// Awaits an operation (a task, as a child) with a deadline: a join of one child, and the awaiting
// segment's deadline watch as the join's branch 1. The awaiting task goes on as soon as the
// operation ends: no timer operation to undo or await (see deadline_watch).
template <class Task>
class timed_awaiter : protected join_awaiter_base {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::join; }
  using value_type = typename Task::value_type;

  timed_awaiter(Task operation, std::chrono::steady_clock::time_point deadline)
      : operation_(std::move(operation)), deadline_(deadline) {
    if (!operation_.valid()) {
      throw std::logic_error("coral: with_timeout of a task that is empty (moved from or already awaited)");
    }
  }
  timed_awaiter(timed_awaiter&&) = delete;
  ~timed_awaiter() {
    // (Destroyed in the wait: the frame goes with its context, and the watch went with the segment
    // leaving it, or it goes otherwise, and the watch is still there.)
    if (watch_) {
      if (deadline_watch* watch = deadline_watch::find(*segment_)) watch->end();
    }
    let_go_of(member_);
  }

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> parent) {
    segment_ = &parent.promise().segment();
    deadline_watch& watch = deadline_watch::of(*segment_);
    open(parent, join_kind::first_end, 1);
    member_ = make_member(operation_.release(), bound_executor<Task>(), 0);
    try {
      watch.begin(join(), deadline_);
      watch_ = &watch;
      begin_start();
    } catch (...) {
      // (An allocation failed: the operation ends unstarted, and the exception reaches the
      // parent, which never suspended.)
      if (std::exchange(watch_, nullptr)) watch.end();
      discard_unstarted(member_);
      throw;
    }
    start(*member_);
    return end_start();
  }

  // True if the deadline passed first (the operation was cancelled, its result is dropped).
  bool await_resume() {
    std::exchange(watch_, nullptr)->end();
    return decided_branch() == 1;
  }

  task_result<value_type>& result() noexcept { return member_->result(); }

 private:
  std::ptrdiff_t decided_branch() noexcept {
    finish_waiting();
    return join().decided_branch();
  }

  Task operation_;
  std::chrono::steady_clock::time_point deadline_;
  task_segment* segment_ = nullptr;
  deadline_watch* watch_ = nullptr;  // while the awaiter waits
  counted_ref<join_member<value_type>> member_;
};

// `limit`: a duration (the deadline is fixed when the task starts, not when it is created) or a
// time point. The timeout message is only built if it is thrown. `late_result`: the operation is a
// task (or a join), whose result, if it has one after the deadline, is real (a raced channel operation that
// lost has done nothing, and its branch ends with no meaningful result).
template <class T, bool late_result, class Task, class Limit>
task<T> run_timed(Task operation, Limit limit) {
  std::chrono::steady_clock::time_point deadline;
  if constexpr (std::is_same_v<Limit, std::chrono::steady_clock::duration>) {
    deadline = deadline_after(limit);
  } else {
    deadline = limit;
  }
  timed_awaiter<Task> timed(std::move(operation), deadline);
  bool expired = co_await timed;
  // The deadline ended the join, but the operation may have finished all the same: it was complete
  // before the cancellation reached it (a value a channel handed over just after the deadline).
  // Then its result is returned: never dropped.
  if (expired && late_result && timed.result().has_value()) expired = false;
  task_segment& self = co_await current_segment{};
  const bool timed_out_inside =
      timed.result().has_exception() && has_error_code(timed.result().exception(), errc::timeout);
  // The operation ended on a deadline (one inside it, or a cancellation of the task by one around
  // it) after this deadline had passed but before its expiry was handled (a busy executor): this
  // deadline passed too, and may be the nearest.
  if (!expired && timed.result().has_exception() && std::chrono::steady_clock::now() >= deadline &&
      (timed_out_inside || (self.cancelled() && is_operation_aborted(timed.result().exception())))) {
    expired = true;
  }
  if (expired) {
    // A cancellation of the task that is not a deadline's is what it hears.
    const bool cancelled = self.cancelled();
    if (cancelled && self.cause() == not_a_deadline) task_segment::throw_cancelled();
    // Otherwise the nearest of the deadlines that passed is reported, whatever the executor's
    // load made them fire in: one inside the operation (its timeout_error goes on), this one, or
    // one around this one (the cancellation goes on, and that timeout reports itself).
    const cancel_cause mine = deadline_cause(deadline);
    const cancel_cause inside = timed_out_inside ? inner_timeout_cause(timed.result().exception()) : mine;
    const cancel_cause around = cancelled ? self.cause() : mine;
    if (inside < mine && inside <= around) static_cast<void>(timed.result().take_or_rethrow());  // rethrows it
    if (around < mine) task_segment::throw_cancelled();
    if constexpr (std::is_same_v<Limit, std::chrono::steady_clock::duration>) {
      throw_timeout(&limit, deadline);
    } else {
      throw_timeout(nullptr, deadline);
    }
  }
  // (This rethrows the operation's exception, if any.)
  if constexpr (std::is_void_v<T>) {
    hand_to_caller(timed.result());
  } else {
    // Straight into this task's result: a received value on loan as it is (see loan), another
    // value with one move.
    co_return result_writer{[&](task_result<T>& result) { pass_on(timed.result(), result); }};
  }
}

}  // namespace detail

template <class Rep, class Period, detail::race_argument A>
CORAL_CORO_CONSUMING_WRAPPER auto with_timeout(std::chrono::duration<Rep, Period> timeout, A&& a) {
  using T = typename detail::join_task_t<A>::value_type;
  constexpr bool late_result = !detail::raceable<A> && !detail::is_duration_v<std::remove_cvref_t<A>>;
  return detail::run_timed<T, late_result>(detail::as_join_task(std::forward<A>(a)), detail::clock_duration(timeout));
}

template <detail::race_argument A>
CORAL_CORO_CONSUMING_WRAPPER auto with_deadline(std::chrono::steady_clock::time_point deadline, A&& a) {
  using T = typename detail::join_task_t<A>::value_type;
  constexpr bool late_result = !detail::raceable<A> && !detail::is_duration_v<std::remove_cvref_t<A>>;
  return detail::run_timed<T, late_result>(detail::as_join_task(std::forward<A>(a)), deadline);
}

}  // namespace coral
