#pragma once

#include <atomic>

namespace coral::detail {

// The hand-shake between a task waiting on something outside its context (a child segment, a
// join's children, an awaiter completed by foreign code) and whatever ends the wait. The wait ends
// once: *completed* (the waker won, and resumes the task) or *abandoned* (the task's context shut
// down first: the task was let go of, and the waker must not touch it).
class wait_link {
 public:
  wait_link() = default;
  // A link whose waker may come before the wait begins, or without one (awaiter: the user's code
  // calls resume()); it starts idle and the task arms it with arm_unless_completed().
  struct starts_idle_t {};
  explicit wait_link(starts_idle_t) noexcept : state_(idle) {}

  // The task, before each wait.
  void arm() noexcept { state_.store(waiting, std::memory_order_relaxed); }

  // The waker: true if it ended the wait (then it resumes the task).
  bool complete() noexcept {
    int expected = waiting;
    return state_.compare_exchange_strong(expected, completed_state, std::memory_order_acq_rel);
  }

  // For a link that starts idle. The task, after it suspended: false if the waker came first
  // (the wait is over before it began). The waker: true if it came first (the task, when it
  // awaits, finds the wait over); false if the wait has begun (or ended).
  bool arm_unless_completed() noexcept {
    int expected = idle;
    return state_.compare_exchange_strong(expected, waiting, std::memory_order_acq_rel);
  }
  bool complete_before_wait() noexcept {
    int expected = idle;
    return state_.compare_exchange_strong(expected, completed_state, std::memory_order_acq_rel);
  }
  // The task, after the wait, to wait on the same link again.
  void disarm() noexcept { state_.store(idle, std::memory_order_relaxed); }

  // The task's side, when its context shuts down: true if it let go before the wait ended.
  bool abandon() noexcept {
    int expected = waiting;
    return state_.compare_exchange_strong(expected, abandoned_state, std::memory_order_acq_rel);
  }

  // The task, when it finds the wait over before it suspended: nobody else looks at the link.
  void mark_completed() noexcept { state_.store(completed_state, std::memory_order_relaxed); }

  bool completed() const noexcept { return state_.load(std::memory_order_acquire) == completed_state; }

 private:
  enum : int { idle, waiting, completed_state, abandoned_state };
  std::atomic<int> state_{waiting};
};

}  // namespace coral::detail
