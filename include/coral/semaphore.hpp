#pragma once

#include <cstddef>
#include <memory>

#include "coral/detail/sync_awaiters.hpp"

namespace coral {

// A counting semaphore for coral tasks: waiting for a permit suspends the task, never its thread.
//
//   coral::semaphore s(3);          // three permits
//   co_await s.acquire();           // takes one, waiting if none is left
//   s.try_acquire();                // takes one if one is left: bool
//   s.release();  s.release(n);     // gives permits back (to waiting tasks first)
//   s.available();                  // permits nobody holds
//
// Semantics:
// - Permits are not owned: any code may release() them, and nothing checks that a task releases
//   what it acquired (use async_mutex for ownership with a guard).
// - Waiting tasks are served first come, first served: release(n) hands the permits straight to
//   the first n waiters, and only what is left goes back to the count, so try_acquire() cannot
//   overtake a waiting task.
// - acquire() completes without suspending if a permit is available. Otherwise the task waits and
//   is resumed on its own executor: posted there by release() (from whatever thread releases),
//   never resumed inside release(). No lock of coral's is held while a task is resumed.
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting
//   acquire() fails with boost::system::system_error(operation_aborted) and takes no permit; a
//   task already cancelled fails at once, even if a permit is available. A permit handed to a
//   waiter at the moment it is cancelled is not lost: either the cancellation came first (the
//   permit goes to the next waiter or the count) or the hand-off did (the acquire() succeeds and
//   the task's next suspension fails).
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later release() does not touch it. A permit handed
//   to a task that is destroyed before it resumes goes back to the semaphore.
// - Destroying the semaphore fails its waiting tasks with operation_aborted.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class semaphore {
 public:
  explicit semaphore(std::size_t initial) : state_(std::make_shared<detail::permit_state>(initial)) {}
  ~semaphore() { state_->abort_all(); }
  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;

  // co_await s.acquire(): takes a permit, waiting for one if none is available.
  [[nodiscard]] detail::permit_awaiter acquire() { return {state_, "coral::semaphore: acquire"}; }

  // Takes a permit if one is available (never while tasks wait for one); true if it did.
  bool try_acquire() { return state_->try_acquire(); }

  // Gives `n` permits: to the first `n` waiting tasks (posted to their executors), the rest to the
  // count.
  void release(std::size_t n = 1) { state_->release(n, nullptr); }

  // Permits available now (0 while tasks wait).
  std::size_t available() const { return state_->available(); }

 private:
  std::shared_ptr<detail::permit_state> state_;
};

}  // namespace coral
