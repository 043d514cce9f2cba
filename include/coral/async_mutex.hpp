#pragma once

#include <memory>
#include <mutex>
#include <utility>

#include "coral/detail/sync/sync_awaiters.hpp"

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

// A mutex for coral tasks: waiting for it suspends the task, never its thread. Both ways C++
// programmers lock a mutex are correct:
//
//   coral::async_mutex m;
//   co_await m.lock();                    // std style: the await yields nothing...
//   ...                                   // (may co_await while holding the lock)
//   m.unlock();                           // ...and the task unlocks by hand
//
//   {
//     auto guard = co_await m.scoped_lock();  // async_mutex_lock: unlocks when it goes
//     ...
//   }
//   if (m.try_lock()) { ...; m.unlock(); }
//
// Semantics:
// - FIFO hand-off: unlock() with tasks waiting gives the lock straight to the first of them (it is
//   never free in between, so try_lock() cannot overtake a waiting task).
// - unlock() of a mutex nobody holds throws std::logic_error and changes nothing: it never makes
//   a second holder. A guard whose lock was also unlocked by hand gives nothing back when it goes,
//   also if another holder has the mutex by then. (unlock() itself cannot tell who calls it: a
//   task that unlocks twice while others wait unlocks the next holder's lock, as with std::mutex.)
// - lock() / scoped_lock() complete without suspending if the mutex is free. Otherwise the task
//   waits and is resumed on its own executor: posted there by unlock() (from whatever thread
//   unlocks), never resumed inside unlock(). No lock of coral's is held while a task is resumed.
// - Both can be raced and timed out (when_any, with_timeout, `||`): `co_await with_timeout(50ms,
//   m.lock())` is a try_lock_for. A raced lock that lost holds nothing (the lock went to the next
//   waiter or stays free); one that won is held: by the task until it calls unlock() (lock()), or
//   by the guard it yields (scoped_lock()).
// - A join that drops a lock its branch took (`when_all(m.lock(), work())` where work() fails, or
//   is cancelled) unlocks it, in both styles. A task that locks inside its own body and then fails
//   before its unlock() keeps the lock, as with std::mutex: use scoped_lock() where that can happen.
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting
//   lock fails with boost::system::system_error(operation_aborted) and acquires nothing; a task
//   already cancelled fails at once, even if the mutex is free. A lock handed to a waiter at the
//   moment it is cancelled is not lost: either the cancellation came first (the waiter fails, the
//   lock goes to the next waiter or stays free) or the hand-off did (the lock succeeds and the
//   task's next suspension fails).
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later unlock() does not touch it. A lock handed to
//   a task that is destroyed before it resumes is handed on.
// - The mutex is not recursive: a task that locks it twice waits for itself forever.
// - Destroying the mutex fails its waiting tasks with operation_aborted. It must outlive its
//   guards and every unlock().
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class async_mutex : public detail::permit_owner {
 public:
  async_mutex() : permit_owner(1, 1) {}

  // co_await m.lock(): waits for the lock; the task holds it until it calls unlock().
  [[nodiscard]] detail::permit_wait<async_mutex> lock() {
    return wait_for_permit<detail::permit_wait<async_mutex>>(*this, "coral::async_mutex: lock",
                                                             detail::wait_kind::mutex_lock);
  }

  // auto guard = co_await m.scoped_lock(): waits for the lock; the guard holds it.
  [[nodiscard]] detail::scoped_permit_wait<async_mutex_lock, async_mutex> scoped_lock() {
    return wait_for_permit<detail::scoped_permit_wait<async_mutex_lock, async_mutex>>(
        *this, "coral::async_mutex: scoped_lock", detail::wait_kind::mutex_lock);
  }

  // Takes the lock if it is free (never while tasks wait for it); true if it did.
  bool try_lock() { return try_take(); }

  // Hands the lock to the first waiting task (posted to its executor), or frees it. Throws
  // std::logic_error if nobody holds it.
  void unlock() { give_back(1, "coral::async_mutex: unlock() of a mutex nobody holds"); }
};

}  // namespace coral
