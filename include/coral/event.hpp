#pragma once

#include <memory>

#include "coral/detail/sync/sync_awaiters.hpp"

namespace coral {

// A manual-reset event for coral tasks: waiting for it suspends the task, never its thread.
//
//   coral::event e;                 // not set
//   co_await e.wait();              // returns once the event is set
//   e.set();  e.reset();  e.is_set();
//
// Semantics:
// - set() sets the event and wakes every task waiting for it, in the order they began to wait;
//   the event stays set (later waits complete at once) until reset(). reset() affects only waits
//   that start after it. set() on a set event and reset() on a reset one do nothing.
// - wait() completes without suspending if the event is set. Otherwise the task waits and is
//   resumed on its own executor: posted there by set() (from whatever thread sets), never resumed
//   inside set(). No lock of coral's is held while a task is resumed.
// - wait() can be raced and timed out (when_any, with_timeout, `||`); one that lost consumed
//   nothing.
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting
//   wait() fails with boost::system::system_error(operation_aborted); a task already cancelled
//   fails at once, even if the event is set. A wait woken by set() at the moment it is cancelled
//   either succeeds (and the task's next suspension fails) or fails; either way nothing is taken
//   from the event.
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later set() does not touch it.
// - Destroying the event fails its waiting tasks with operation_aborted.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class event {
 public:
  event() : state_(std::make_shared<detail::event_state>()) {}
  ~event() { state_->abort_all(); }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  // co_await e.wait(): returns once the event is set.
  [[nodiscard]] detail::event_awaiter wait() { return detail::event_awaiter(state_, "coral::event: wait"); }

  // Sets the event; every waiting task is posted to its executor.
  void set() { state_->set(); }
  // Clears the event: waits that start afterwards wait for the next set().
  void reset() { state_->reset(); }
  bool is_set() const { return state_->is_set(); }

 private:
  std::shared_ptr<detail::event_state> state_;
};

}  // namespace coral
