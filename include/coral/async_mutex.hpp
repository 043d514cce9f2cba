#pragma once

#include <memory>
#include <mutex>
#include <utility>

#include "coral/detail/sync_awaiters.hpp"

namespace coral {

class async_mutex;

// Owns a lock of an async_mutex and unlocks it when destroyed (move-only, like std::unique_lock
// without the deferred states). A moved-from guard owns nothing.
//
// Thread safety: distinct objects: safe. Shared objects: unsafe (a guard is owned by one task; it
// may be moved to another and unlock there, on any thread).
class [[nodiscard]] async_mutex_lock : detail::permit_guard<async_mutex> {
 public:
  // Adopts a lock the caller already holds (after try_lock()).
  async_mutex_lock(async_mutex& mutex, std::adopt_lock_t) noexcept : permit_guard(mutex) {}

  // Unlocks now (see async_mutex::unlock); the guard then owns nothing.
  void unlock() noexcept { give_back_now(); }
  bool owns_lock() const noexcept { return owner() != nullptr; }
  async_mutex* mutex() const noexcept { return owner(); }
};

// A mutex for coral tasks: waiting for it suspends the task, never its thread.
//
//   coral::async_mutex m;
//   {
//     auto guard = co_await m.lock();     // async_mutex_lock: unlocks when it goes
//     ...                                 // may co_await while holding the lock
//   }
//   if (m.try_lock()) { ...; m.unlock(); }
//
// Semantics:
// - FIFO hand-off: unlock() with tasks waiting gives the lock straight to the first of them (it is
//   never free in between, so try_lock() cannot overtake a waiting task).
// - lock() completes without suspending if the mutex is free. Otherwise the task waits and is
//   resumed on its own executor: posted there by unlock() (from whatever thread unlocks), never
//   resumed inside unlock(). No lock of coral's is held while a task is resumed.
// - lock() can be raced and timed out (when_any, with_timeout, `||`): `co_await
//   with_timeout(50ms, m.lock())` is a try_lock_for. A raced lock that lost holds nothing (the
//   lock went to the next waiter or stays free); one that won yields the guard.
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting
//   lock() fails with boost::system::system_error(operation_aborted) and acquires nothing; a task
//   already cancelled fails at once, even if the mutex is free. A lock handed to a waiter at the
//   moment it is cancelled is not lost: either the cancellation came first (the waiter fails, the
//   lock goes to the next waiter or stays free) or the hand-off did (the lock() succeeds and the
//   task's next suspension fails).
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later unlock() does not touch it. A lock handed to
//   a task that is destroyed before it resumes is handed on.
// - The mutex is not recursive: a task that locks it twice waits for itself forever. unlock()
//   must be called by whoever holds the lock (a task, or code that won try_lock()), once.
// - Destroying the mutex fails its waiting tasks with operation_aborted. It must outlive its
//   guards and every unlock().
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class async_mutex : public detail::permit_owner {
 public:
  async_mutex() : permit_owner(1) {}

  // auto guard = co_await m.lock(): waits for the lock; the guard holds it.
  [[nodiscard]] detail::lock_awaiter<async_mutex_lock, async_mutex> lock() {
    return wait_for_permit<async_mutex_lock>(*this, "coral::async_mutex: lock", detail::wait_kind::mutex_lock);
  }

  // Takes the lock if it is free (never while tasks wait for it); true if it did.
  bool try_lock() { return try_take(); }

  // Hands the lock to the first waiting task (posted to its executor), or frees it.
  void unlock() { give_back(1); }
};

}  // namespace coral
