#pragma once

#include <atomic>
#include <coroutine>
#include <memory>
#include <optional>
#include <utility>

#include "coral/detail/core/result_segment.hpp"
#include "coral/detail/wait/suspended_task.hpp"
#include "coral/detail/wait/wait_link.hpp"

namespace coral::detail {

// A child task that runs as a segment of its own (on another executor, or shielded from its
// parent's cancellation): its own executor, signal and cancellation flag, so that nothing of the
// parent's is touched from the child's threads. When it ends it resumes the parent through the
// parent's gate, unless the parent let go of it first (its context shut down).
//
// Not a join of one member (as with_timeout's operation is): a join's members can always be
// cancelled (by a sibling, a deadline), so each is serialised, a strand on a multi-threaded
// executor; a child nothing can cancel (non_cancellable's, or one whose parent nothing can cancel,
// on its parent's context: on another, the shutdown of the parent's context cancels it) runs on
// its executor as it is. And a join's member is resumed through the join's counts and
// race decision, which a single child never needs.
template <class T>
class child_segment_state final : public result_segment<T> {
 public:
  // `parent_kind`: the kind of the parent's executor (see resumption_memory::prepare).
  child_segment_state(placement&& where, executor_target parent_kind)
      : result_segment<T>(std::move(where), typename result_segment<T>::child_segment_t()) {
    parent_resumption_.prepare(parent_kind);
  }

  // The awaiting parent, kept alive until the child ends or the parent lets go.
  suspended_task parent;
  // The child runs on the parent's context: if the parent is abandoned (the context shuts down),
  // its frames go after the child's (which may hold references into them), when the child ends
  // during the same shutdown.
  bool local = false;
  // The parent's gate (for a child that is not local): the parent may be gone when the child ends.
  std::shared_ptr<context_gate> parent_gate;

  // On the parent's executor: true if the parent let go before the child ended (the child is
  // then cancelled and cleans up after itself).
  bool abandon_wait() noexcept { return link_.abandon(); }
  // Whether the child ended while the parent waited for it (nothing of it runs any more).
  bool completed() const noexcept { return link_.completed(); }

 protected:
  void on_end() noexcept override {
    // A child on another context takes a pass on the parent's gate before it may claim the parent:
    // if the parent's context is shutting down, the shutdown lets go of the parent (its abandon
    // abandons the wait), on the thread destroying the context while it still exists.
    std::optional<context_gate::pass> pass;
    if (!local) {
      pass.emplace(*parent_gate);
      if (!*pass) {
        this->mark_observed();  // nobody is left to observe it: its parent is going
        return;
      }
    }
    if (link_.complete()) {
      if (pass) {
        parent.resume_later_within_pass(&parent_resumption_);
      } else {
        parent.resume_later(&parent_resumption_);
      }
    } else {
      this->mark_observed();  // nobody is left to observe it: its parent is gone
      if (local) parent.let_go();
    }
  }

 private:
  wait_link link_;
  resumption_memory parent_resumption_;  // the parent's awaiter keeps this object until it resumes
};

// Forwards the parent's cancellation to a child segment (installed in the parent's slot while it
// waits, so it runs on the parent's executor; the child's signal is emitted on the child's).
struct forward_cancellation {
  forward_cancellation(segment_ref c, task_segment* p) noexcept : child(std::move(c)), parent(p) {}
  segment_ref child;
  task_segment* parent;  // whose slot holds this handler: alive while it runs
  void operator()(asio::cancellation_type type) const { child->cancel(type, parent->cause()); }
};

// Awaits a child that runs as a segment of its own.
template <class T>
class child_segment_awaiter : public external_wait {
 public:
  using frame_type = std::coroutine_handle<task_promise<T>>;

  child_segment_awaiter() noexcept = default;
  child_segment_awaiter(child_segment_awaiter&& other) noexcept
      : state_(std::move(other.state_)), parent_segment_(other.parent_segment_), forward_(other.forward_) {}
  child_segment_awaiter& operator=(child_segment_awaiter&&) = delete;
  ~child_segment_awaiter() {
    if (state_) {
      if (state_->abandon_wait()) {
        state_->cancel();
      } else if (state_->completed()) {
        // The child has ended: what is left of its result goes here, before the parent goes on.
        // (A child the parent let go of when its context shut down may still be running.) A
        // parent destroyed before it took the result (its context shut down) did not hear of
        // the child's operation_aborted, but that is the parent's cancellation, forwarded: not a
        // failure to report.
        if (state_->result().has_exception() && is_operation_aborted(state_->result().exception())) {
          state_->mark_observed();
        }
        state_->drop_result();
      }
    }
  }

  // Takes `frame` and starts it on `executor` (on the spot if that is the parent's executor) as a
  // segment of its own; the parent stays suspended until it ends. With `forward_cancel`, the
  // parent's cancellation reaches the child.
  template <class Promise>
  void start(frame_type frame, std::coroutine_handle<Promise> parent, const asio::any_io_executor& executor,
             bool forward_cancel) {
    struct frame_guard {
      frame_type f;
      ~frame_guard() {
        if (f) f.destroy();
      }
    } guard{frame};
    task_segment& parent_segment = parent.promise().segment();
    if (forward_cancel) parent_segment.throw_if_cancelled();
    const bool here = executor == parent_segment.executor();
    // Only a parent that can be cancelled forwards its cancellation (see place()).
    forward_cancel = forward_cancel && parent_segment.op_slot().is_connected();
    // A child on another context is cancelled by the shutdown of its parent's (abandon(), on the
    // thread destroying that context) while its own context's threads run it: it is serialised
    // even when its parent cannot cancel it, so that this cancellation too is used only on its
    // executor. A child on its parent's context does not run while that context shuts down.
    const bool local = &asio::query(executor, asio::execution::context) ==
                       &asio::query(parent_segment.executor(), asio::execution::context);
    auto* state =
        new child_segment_state<T>(place(executor, forward_cancel || !local), parent_segment.executor_target_kind());
    state->attach(std::exchange(guard.f, nullptr));
    state->start_record(&parent_segment, {});
    state->local = local;
    if (!state->local) state->parent_gate = parent_segment.shared_gate();
    state_ = counted_ref<child_segment_state<T>>(state);  // this awaiter's (the first is the child's)
    state->parent.keep(parent);
    parent_segment_ = &parent_segment;
    forward_ = forward_cancel;
    if (forward_) parent_segment.slot().template emplace<forward_cancellation>(segment_ref(state), &parent_segment);
    parent_segment.set_external_wait(this);
    if (here) {
      state->start_here();
    } else {
      // (The parent, resumed through its executor, rethrows a failed start as the child's.)
      state->start_or_discard();
    }
  }

  user_value_t<T> finish() { return hand_to_caller(end_wait()); }
  // As finish(), for a join around the awaiting task: a result that holds something for the task
  // is passed on as it is (see held_for_task).
  T finish_held() { return end_wait().take_or_rethrow(); }

  // The parent's context is shutting down: cancel the child (serialised unless it is local, and
  // then not running), let go of the parent.
  void abandon() noexcept override {
    if (!state_->abandon_wait()) return;  // the child has ended and the parent's resumption is queued
    state_->cancel();
    if (!state_->local) state_->parent.let_go();  // may destroy the frame holding this awaiter
  }

 private:
  task_result<T>& end_wait() {
    parent_segment_->set_external_wait(nullptr);
    if (forward_) parent_segment_->slot().clear();
    state_->mark_observed();
    return state_->result();
  }

  counted_ref<child_segment_state<T>> state_;
  task_segment* parent_segment_ = nullptr;
  bool forward_ = false;
};

}  // namespace coral::detail
