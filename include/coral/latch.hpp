#pragma once

#include <cstddef>
#include <memory>

#include "coral/detail/sync/sync_awaiters.hpp"

namespace coral {

// A single-use count-down for coral tasks, as std::latch is for threads: waiting for it suspends
// the task, never its thread.
//
//   coral::latch done(3);               // three arrivals expected
//   done.count_down();                  // one arrived (any thread, any code; count_down(k): k)
//   co_await done.wait();               // returns once the count is zero
//   co_await done.arrive_and_wait();    // count_down(), then wait()
//   done.try_wait();                    // true once the count is zero
//
// Semantics:
// - The count only goes down. count_down(k) with more than is left throws std::logic_error and
//   changes nothing. The count reaching zero wakes every waiting task, in the order they began
//   to wait; from then on every wait completes at once. A latch is not reused (barrier is).
// - arrive_and_wait(k) counts down when it is called, as std::latch's does; what is awaited is
//   the wait. So a raced or cancelled arrive_and_wait() has arrived all the same.
// - wait() completes without suspending if the count is zero. Otherwise the task waits and is
//   resumed on its own executor: posted there by the count_down() that reached zero (from
//   whatever thread), never resumed inside it. No lock of coral's is held while a task is resumed.
// - wait() can be raced and timed out (when_any, with_timeout, `||`); one that lost took nothing.
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting
//   wait() fails with boost::system::system_error(operation_aborted); a task already cancelled
//   fails at once, even if the count is zero.
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later count_down() does not touch it.
// - Destroying the latch fails its waiting tasks with operation_aborted.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class latch {
 public:
  explicit latch(std::size_t count) : state_(std::make_shared<detail::latch_state>(count)) {}
  ~latch() { state_->abort_all(); }
  latch(const latch&) = delete;
  latch& operator=(const latch&) = delete;

  // Lowers the count by `n`; at zero, every waiting task is posted to its executor.
  void count_down(std::size_t n = 1) { state_->count_down(n); }

  // co_await l.wait(): returns once the count is zero.
  [[nodiscard]] detail::latch_awaiter wait() { return detail::latch_awaiter(state_, "coral::latch: wait"); }

  // co_await l.arrive_and_wait(n): count_down(n) now, then waits for zero.
  [[nodiscard]] detail::latch_awaiter arrive_and_wait(std::size_t n = 1) {
    count_down(n);
    return wait();
  }

  // Whether the count is zero (never waits).
  bool try_wait() const { return state_->is_set(); }

 private:
  std::shared_ptr<detail::latch_state> state_;
};

}  // namespace coral
