#pragma once

#include <coroutine>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "coral/detail/core/resumption_memory.hpp"
#include "coral/detail/core/task_segment.hpp"

namespace coral::detail {

// How deep wakers may resume tasks of their own executor on their stack before posting instead
// (a chain of tasks each waking the next). One of two budgets, for two dangers: this one bounds
// the stack; inline_resumes_per_turn (task_segment.hpp) bounds how long one turn of the executor
// keeps its thread (two tasks trading values, each resuming the other at depth 1, forever).
inline constexpr unsigned max_inline_resume_depth = 16;
inline constinit thread_local unsigned inline_resume_depth = 0;

// A task suspended at one of coral's suspension points, and the one way to resume it. Every
// suspension point (sleep, Asio operation, channel, child, yield, awaiter, future, foreign
// awaitable) suspends through this and resumes through it:
//  - suspend(): on the task's executor; throws operation_aborted if the task is cancelled
//    (cancellation is level-triggered) and keeps the task's segment alive until resumed;
//  - resume_here(): on the task's executor;
//  - resume_from(waker) / resume_later(): from anywhere; posts through the context's gate, so
//    nothing is posted into a context that is shutting down (the segment is let go instead).
class suspended_task {
 public:
  suspended_task() noexcept = default;

  template <class Promise>
  void suspend(std::coroutine_handle<Promise> coroutine) {
    coroutine.promise().segment().throw_if_cancelled();
    keep(coroutine);
  }
  // As suspend(), without the cancellation check (a wait the task's cancellation does not reach).
  template <class Promise>
  void keep(std::coroutine_handle<Promise> coroutine) {
    task_segment& segment = coroutine.promise().segment();
    segment_ = &segment;
    coroutine_ = coroutine;
    keep_ = keep_alive(&segment);
#if CORAL_TASK_TRACKING
    if (task_record* record = segment.record()) [[unlikely]]
      record_suspend(*record);
#endif
  }

  task_segment& segment() const noexcept {
    return *segment_;
  }

  void resume_here() {
    auto keep = std::move(keep_);
    resume_segment(*segment_, coroutine_);
  }

  // On the task's executor: at the back of its queue.
  void resume_soon() {
    asio::post(segment_->executor(), queued_resumption());
  }

  // On the task's executor, from one of its handlers: once that handler has returned.
  void resume_after_this_handler() {
    asio::defer(segment_->executor(), queued_resumption());
  }

  // Nothing touches this object once the task is posted (it may be gone). `memory`: where the
  // post may live, for a waker that must not fail (see resumption_memory); it must be kept by the
  // task's frame.
  void resume_later(resumption_memory* memory = nullptr) {
    task_segment* segment = segment_;
    posted_resume resumption = queued_resumption();
    context_gate::pass pass(segment->gate());
    if (!pass) return;  // the context is shutting down: the task is let go of here
    // (The executor copied inside the pass: once the task is posted, the segment may be gone.)
    post_to(asio::any_io_executor(segment->executor()), segment->executor_target_kind(), std::move(resumption), memory);
  }
  // As resume_later(), for a caller holding a pass on the task's gate (see
  // queued_waiter::claim_for_wake): the context exists until the pass is left, also if its
  // shutdown has begun meanwhile (then the resumption is destroyed with the context's queue, on
  // the thread destroying it), so the post does not ask the gate again.
  void resume_later_within_pass(resumption_memory* memory = nullptr) {
    task_segment* segment = segment_;
    post_to(segment->executor(), segment->executor_target_kind(), queued_resumption(), memory);
  }

  // `waker`: the segment of the coral task completing the wait, if any. Only a waker on the
  // same execution context can be running on the task's executor; comparing gates first means
  // the executor of a context that may be shutting down is never read.
  void resume_from(task_segment* waker, bool within_pass = false, resumption_memory* memory = nullptr) {
    if (waker && &waker->gate() == &segment_->gate() && waker->executor() == segment_->executor()) {
      resume_nested(memory);
    } else if (within_pass) {
      resume_later_within_pass(memory);
    } else {
      resume_later(memory);
    }
  }

  // On the task's executor, from code that was not resumed by it (a waker): resumes it on this
  // stack, unless wakers are nested too deeply here or this turn of the executor has resumed
  // enough tasks (then it is posted, so that one turn cannot starve the others).
  void resume_nested(resumption_memory* memory = nullptr) {
    if (inline_resume_depth < max_inline_resume_depth && inline_resumes_left > 0) {
      --inline_resumes_left;
      ++inline_resume_depth;
      struct depth_guard {
        ~depth_guard() { --inline_resume_depth; }
      } guard;
      resume_here();
    } else {
      resume_later(memory);
    }
  }

  // Lets go of the segment without resuming it (its wait was abandoned). May destroy the frame
  // that holds this object: nothing may touch it afterwards.
  void let_go() noexcept {
    keep_.reset();
  }

 private:
  // The resumption to queue on the task's executor (its record says it is queued from now).
  posted_resume queued_resumption() noexcept {
#if CORAL_TASK_TRACKING
    if (task_record* record = segment_->record()) [[unlikely]]
      record_queued(*record);
#endif
    return posted_resume{coroutine_, std::move(keep_)};
  }

  // (`executor` by value where the segment may go once the resumption is posted.)
  static void post_to(const asio::any_io_executor& executor, executor_target kind, posted_resume&& resumption,
                      resumption_memory* memory) {
    if (memory) {
      memory->post(executor, kind, std::move(resumption));
    } else {
      asio::post(executor, std::move(resumption));
    }
  }

  task_segment* segment_ = nullptr;
  std::coroutine_handle<> coroutine_;
  keep_alive keep_;
};

// The completion handler coral gives to Asio operations: its associated executor is the task's
// executor (so Asio resumes the task there) and its associated cancellation slot is the task's (so
// cancelling the task cancels the operation). It stores the completion arguments in the awaiter and
// resumes the coroutine. Until then it keeps the segment alive; destroyed uninvoked, it lets go.
template <class... Args>
class task_completion_handler {
 public:
  using results_type = std::optional<std::tuple<std::decay_t<Args>...>>;
  using executor_type = asio::any_io_executor;
  using cancellation_slot_type = asio::cancellation_slot;

  task_completion_handler(results_type& results, suspended_task task) : results_(&results), task_(std::move(task)) {}

  executor_type get_executor() const noexcept { return task_.segment().executor(); }
  cancellation_slot_type get_cancellation_slot() const noexcept { return task_.segment().op_slot(); }

  // The task that started the operation is waiting for it: its completion continues that task, as
  // Asio's spawn marks its handlers. An operation that completes at once is then queued on this
  // thread instead of waking another one to run it.
  friend bool asio_handler_is_continuation(task_completion_handler*) noexcept { return true; }

  template <class... A>
  void operator()(A&&... args) {
    // The operation is over: its cancellation handler must not outlive it (it may point into an
    // object the coroutine is about to destroy).
    task_.segment().slot().clear();
    results_->emplace(std::forward<A>(args)...);
    if constexpr ((std::is_trivially_destructible_v<std::decay_t<A>> && ...)) {
      inline_resumes_left = inline_resumes_per_turn;  // the executor's turn
      task_.resume_here();
    } else {
      // The operation destroys what it passed (a moved-from value, a tuple) when this call
      // returns: resumed inside it, the task could end, and its job report done, before that.
      task_.resume_after_this_handler();
    }
  }

 private:
  results_type* results_;
  suspended_task task_;
};

}  // namespace coral::detail
