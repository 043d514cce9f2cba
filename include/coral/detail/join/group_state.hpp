#pragma once

#include <array>
#include <atomic>
#include <boost/intrusive/list.hpp>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "coral/detail/core/ref_counted.hpp"
#include "coral/detail/core/result_segment.hpp"
#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

// A task group's child in its group's list (guarded by the group's mutex).
struct group_link : boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> {
  segment_ref segment;       // set by add(), let go of when the child ends
  bool cancel_sent = false;  // (a child is cancelled once: cancellation is level-triggered)
};

// The state shared by a task_group and its children: the children still running, the first
// failure, and the task waiting in join(). Freed when the group and every child have let go.
//
// Lock discipline: `mutex_` guards the list, the failure and the joiner; cancelling children and
// resuming the joiner happen after it is released.
class group_state : public ref_counted<group_state> {
 public:
  // Links a child that is about to start (holding an object reference to it). A group that was
  // cancelled, or whose child failed, cancels it at once.
  void add(group_link& link, task_segment& segment) {
    link.segment = segment_ref(&segment);
    bool cancel_now;
    {
      std::lock_guard lock(mutex_);
      children_.push_front(link);
      ++running_;
      cancel_now = cancelled_;
      link.cancel_sent = cancel_now;
    }
    if (cancel_now) link.segment->cancel();
  }

  // A child ended (any thread): unlinks it; its failure, if first, is kept and cancels the others;
  // the last one resumes the joiner.
  // (`note`: the failure's trace, when the child was a tracked task.)
  void child_ended(group_link& link, std::exception_ptr failure, failure_note_ptr note = nullptr) noexcept {
    bool cancel_others = false;
    suspended_task joiner;
    bool resume = false;
    const bool aborted = failure && is_operation_aborted(failure);
    // A pass on the joiner's gate before taking the joiner (see queued_waiter::claim_for_wake): if
    // its context is shutting down, the joiner stays for the shutdown to let go of.
    std::optional<context_gate::pass> pass;
    {
      std::lock_guard lock(mutex_);
      children_.erase(children_.iterator_to(link));
      // Once the group is cancelled, children ending with operation_aborted did what they were
      // told: that is not a failure to report. (A dropped exception is freed after the lock.)
      if (failure && !failure_ && !(cancelled_ && aborted)) {
        failure_ = std::move(failure);
        failure_note_ = std::move(note);
        cancel_others = !cancelled_;
        cancelled_ = true;
      }
      if (--running_ == 0 && joiner_waiting_) {
        pass.emplace(joiner_.segment().gate());
        if (*pass) {
          joiner_waiting_ = false;
          joiner = std::move(joiner_);
          resume = true;
        }
      }
    }
    link.segment.reset();
    if (cancel_others) cancel_children();
    if (resume) joiner.resume_later_within_pass(&joiner_resumption_);
  }

  // Cancels every running child, and every child added from now on until the group is joined.
  void cancel() noexcept {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    cancel_children();
  }

  std::size_t size() const noexcept {
    std::lock_guard lock(mutex_);
    return running_;
  }

  // The joiner: true if it must wait (children are running); it is then resumed by the last one.
  // (Not a wait_link: whether the joiner waits is decided with the count of running children,
  // under the group's mutex, which every child's end takes anyway.)
  template <class Promise>
  bool wait(std::coroutine_handle<Promise> coroutine) {
    joiner_resumption_.prepare(coroutine.promise().segment().executor_target_kind());
    std::lock_guard lock(mutex_);
    if (running_ == 0) return false;
    joiner_.keep(coroutine);
    joiner_waiting_ = true;
    return true;
  }

  // The joiner's context is shutting down: true if it was still waiting (it is let go of).
  bool abandon_wait() noexcept {
    suspended_task joiner;
    {
      std::lock_guard lock(mutex_);
      if (!joiner_waiting_) return false;
      joiner_waiting_ = false;
      joiner = std::move(joiner_);
    }
    joiner.let_go();
    return true;
  }

  // After a join: the first failure (handed over once, its trace to the joiner, which rethrows
  // it), and the group is usable again.
  std::exception_ptr take_failure() noexcept {
    failure_note_ptr note;
    std::exception_ptr failure;
    {
      std::lock_guard lock(mutex_);
      cancelled_ = false;
      failure = std::exchange(failure_, nullptr);
      note = std::move(failure_note_);
    }
#if CORAL_TASK_TRACKING
    if (note) pass_on_failure_note(std::move(note));
#endif
    return failure;
  }

 private:
  friend class ref_counted<group_state>;
  ~group_state() {
    // A failure nobody joined to see is reported, not lost.
    if (failure_) report_unobserved_exception(failure_, failure_note_.get());
  }
  void destroy_self() noexcept {
    delete this;
  }

  // Cancels the children in batches of a fixed size, each taken under the lock and cancelled
  // after it: nothing here allocates, so a group can always be cancelled. (A child whose
  // cancellation cannot be posted, for want of memory, is still marked cancelled: it fails at its
  // next suspension.)
  void cancel_children() noexcept {
    for (;;) {
      std::array<segment_ref, 16> batch;
      std::size_t n = 0;
      {
        std::lock_guard lock(mutex_);
        for (auto l = children_.begin(); l != children_.end() && n < batch.size(); ++l) {
          if (l->cancel_sent) continue;
          l->cancel_sent = true;
          batch[n++] = segment_ref(l->segment.get());
        }
      }
      if (n == 0) return;
      for (std::size_t i = 0; i < n; ++i) {
        try {
          batch[i]->cancel();
        } catch (...) {
        }
      }
    }
  }

  mutable std::mutex mutex_;
  boost::intrusive::list<group_link, boost::intrusive::constant_time_size<false>> children_;
  std::size_t running_ = 0;
  bool cancelled_ = false;
  std::exception_ptr failure_;
  failure_note_ptr failure_note_;
  suspended_task joiner_;
  resumption_memory joiner_resumption_;  // the joiner's task_group keeps this object until it resumes
  bool joiner_waiting_ = false;
};

}  // namespace coral::detail
