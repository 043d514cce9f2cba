#pragma once

#include <cstddef>
#include <limits>
#include <mutex>

#include "coral/detail/sync/sync_awaiters.hpp"

namespace coral {

class shared_mutex;

// Owns the exclusive (writer's) lock of a shared_mutex and unlocks it when destroyed (move-only,
// as async_mutex_lock). A moved-from guard owns nothing.
//
// Thread safety: distinct objects: safe. Shared objects: unsafe (a guard is owned by one task; it
// may be moved to another and unlock there, on any thread).
class [[nodiscard]] shared_mutex_lock : detail::permit_guard<shared_mutex> {
 public:
  // Adopts the exclusive lock the caller already holds (after try_lock()).
  inline shared_mutex_lock(shared_mutex& mutex, std::adopt_lock_t) noexcept;

  // Unlocks now (see shared_mutex::unlock); the guard then owns nothing.
  void unlock() noexcept { give_back_now(); }
  bool owns_lock() const noexcept { return owner() != nullptr; }
  shared_mutex* mutex() const noexcept { return owner(); }
};

// Owns a shared (reader's) lock of a shared_mutex and unlocks it when destroyed (move-only). A
// moved-from guard owns nothing.
//
// Thread safety: as shared_mutex_lock.
class [[nodiscard]] shared_mutex_shared_lock : detail::permit_guard<shared_mutex> {
 public:
  // Adopts a shared lock the caller already holds (after try_lock_shared()).
  shared_mutex_shared_lock(shared_mutex& mutex, std::adopt_lock_t) noexcept : permit_guard(mutex, 1) {}

  // Unlocks now (see shared_mutex::unlock_shared); the guard then owns nothing.
  void unlock() noexcept { give_back_now(); }
  bool owns_lock() const noexcept { return owner() != nullptr; }
  shared_mutex* mutex() const noexcept { return owner(); }
};

// A readers-writer lock for coral tasks, as std::shared_mutex is for threads: many readers at once
// or one writer. Waiting for it suspends the task, never its thread.
//
//   coral::shared_mutex m;
//   co_await m.lock();                 // writer, std style: the await yields nothing...
//   m.unlock();                        // ...and the task unlocks by hand
//   co_await m.lock_shared();          // reader, std style
//   m.unlock_shared();
//   {
//     auto w = co_await m.scoped_lock();         // shared_mutex_lock: unlocks when it goes
//     auto r = co_await m.scoped_lock_shared();  // shared_mutex_shared_lock (in another task)
//   }
//   m.try_lock();  m.try_lock_shared();          // bool, never waits
//
// Semantics:
// - Exclusion: while a writer holds the lock nobody else does; readers hold it together.
// - FIFO, with no writer starvation: tasks are served in the order they began to wait. A waiting
//   writer holds back every reader that comes after it, also while readers hold the lock; when the
//   writer unlocks, the readers queued behind it (up to the next waiting writer) all get the lock
//   together. try_lock() / try_lock_shared() never overtake a waiting task.
// - unlock() when no writer holds the lock, and unlock_shared() when no reader does, throw
//   std::logic_error and change nothing. (unlock_shared() cannot tell which reader calls it.) A
//   guard whose lock was also unlocked by hand gives nothing back when it goes if it can tell: a
//   writer's guard always can; a reader's can unless other readers hold the lock by then (it then
//   gives back one of theirs, as a second unlock_shared() would).
// - A join that drops a lock its branch took (`when_all(m.lock_shared(), work())` where work()
//   fails, or is cancelled) unlocks it, in both styles and both modes.
// - Every wait completes without suspending if the lock can be taken at once. Otherwise the task
//   waits and is resumed on its own executor: posted there by the unlock that let it in (from
//   whatever thread unlocks), never resumed inside it. No lock of coral's is held while a task is
//   resumed.
// - Every wait can be raced and timed out (when_any, with_timeout, `||`): one that lost holds
//   nothing (and a writer that gave up lets in the readers it held back); one that won is held, by
//   the task (lock(), lock_shared()) or by the guard it yields (scoped_lock(), scoped_lock_shared()).
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting lock
//   fails with boost::system::system_error(operation_aborted) and takes nothing; a task already
//   cancelled fails at once, even if the lock is free. A lock handed to a waiter at the moment it
//   is cancelled is not lost: either the cancellation came first or the hand-off did (the lock
//   succeeds and the task's next suspension fails).
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later unlock does not touch it. A lock handed to a
//   task that is destroyed before it resumes is handed on.
// - Not recursive, not upgradable: a task that holds it and waits for it again waits for itself.
// - Destroying the mutex fails its waiting tasks with operation_aborted. It must outlive its guards
//   and every unlock.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class shared_mutex : public detail::permit_owner {
 public:
  // (A reader holds one permit, a writer every one: more readers than that cannot be.)
  shared_mutex() : permit_owner(all, all, true) {}

  // co_await m.lock(): waits for the exclusive lock; the task holds it until it calls unlock().
  [[nodiscard]] detail::permit_wait<shared_mutex> lock() {
    return wait_for_permit<detail::permit_wait<shared_mutex>>(*this, "coral::shared_mutex: lock",
                                                              detail::wait_kind::shared_mutex_lock, all);
  }

  // auto guard = co_await m.scoped_lock(): waits for the exclusive lock; the guard holds it.
  [[nodiscard]] detail::scoped_permit_wait<shared_mutex_lock, shared_mutex> scoped_lock() {
    return wait_for_permit<detail::scoped_permit_wait<shared_mutex_lock, shared_mutex>>(
        *this, "coral::shared_mutex: scoped_lock", detail::wait_kind::shared_mutex_lock, all);
  }

  // co_await m.lock_shared(): waits for a shared lock; the task holds it until unlock_shared().
  [[nodiscard]] detail::permit_wait<shared_mutex> lock_shared() {
    return wait_for_permit<detail::permit_wait<shared_mutex>>(*this, "coral::shared_mutex: lock_shared",
                                                              detail::wait_kind::shared_mutex_lock_shared, 1);
  }

  // auto guard = co_await m.scoped_lock_shared(): waits for a shared lock; the guard holds it.
  [[nodiscard]] detail::scoped_permit_wait<shared_mutex_shared_lock, shared_mutex> scoped_lock_shared() {
    return wait_for_permit<detail::scoped_permit_wait<shared_mutex_shared_lock, shared_mutex>>(
        *this, "coral::shared_mutex: scoped_lock_shared", detail::wait_kind::shared_mutex_lock_shared, 1);
  }

  // Takes the exclusive lock if nobody holds the mutex and nobody waits for it; true if it did.
  bool try_lock() { return try_take(all); }
  // Takes a shared lock if no writer holds the mutex or waits for it; true if it did.
  bool try_lock_shared() { return try_take(1); }

  // Gives up the exclusive lock: to the first waiting writer, or to the readers queued before the
  // next one (posted to their executors). Throws std::logic_error if no writer holds it.
  void unlock() { give_back(all, "coral::shared_mutex: unlock() while no writer holds the lock"); }
  // Gives up a shared lock; the last reader's lets the first waiting writer in. Throws
  // std::logic_error if no reader holds it.
  void unlock_shared() { give_back(1, "coral::shared_mutex: unlock_shared() while no reader holds the lock"); }

 private:
  static constexpr std::size_t all = std::numeric_limits<std::size_t>::max();
  friend class shared_mutex_lock;
};

shared_mutex_lock::shared_mutex_lock(shared_mutex& mutex, std::adopt_lock_t) noexcept
    : permit_guard(mutex, shared_mutex::all) {}

}  // namespace coral
