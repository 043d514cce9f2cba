#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>

#include "coral/detail/sync/sync_awaiters.hpp"

namespace coral {

class semaphore;

// Owns a permit of a semaphore and gives it back when destroyed (move-only, as async_mutex_lock
// owns a lock). A moved-from permit owns nothing.
//
// Thread safety: distinct objects: safe. Shared objects: unsafe (a permit is owned by one task; it
// may be moved to another and be given back there, on any thread).
class [[nodiscard]] semaphore_permit : detail::permit_guard<semaphore> {
 public:
  // Adopts a permit the caller already holds (after try_acquire()).
  semaphore_permit(semaphore& s, std::adopt_lock_t) noexcept : permit_guard(s) {}

  // Gives the permit back now (see semaphore::release); the guard then owns nothing.
  void give_back() noexcept { give_back_now(); }
  // Keeps the permit taken without this guard: whoever it is handed to gives it back by hand
  // with semaphore::release().
  void detach() noexcept { keep_taken(); }
  bool owns_permit() const noexcept { return owner() != nullptr; }
};

// A counting semaphore for coral tasks: waiting for a permit suspends the task, never its thread.
// Both ways C++ programmers take a permit are correct:
//
//   coral::semaphore s(3);              // three permits
//   co_await s.acquire();               // std style: the await yields nothing...
//   ...
//   s.release();                        // ...and the task gives the permit back by hand
//   {
//     auto permit = co_await s.scoped_acquire();  // semaphore_permit: gives it back when it goes
//     ...
//   }
//   s.try_acquire();                    // takes one if one is left: bool (then s.release())
//   s.release(n);                       // gives permits back (to waiting tasks first)
//   s.available();                      // permits nobody holds
//
// Semantics:
// - `co_await s.scoped_acquire()` yields a semaphore_permit, which gives the permit back when it
//   is destroyed. permit.detach() keeps it taken for code that hands permits over by hand: any
//   code may release() permits, and nothing checks that it releases what was acquired.
// - A join that drops a permit its branch took (`when_all(s.acquire(), work())` where work()
//   fails, or is cancelled) gives it back, in both styles.
// - Waiting tasks are served first come, first served: release(n) hands the permits straight to
//   the first n waiters, and only what is left goes back to the count, so try_acquire() cannot
//   overtake a waiting task.
// - acquire() completes without suspending if a permit is available. Otherwise the task waits and
//   is resumed on its own executor: posted there by release() (from whatever thread releases),
//   never resumed inside release(). No lock of coral's is held while a task is resumed.
// - Both can be raced and timed out (when_any, with_timeout, `||`): one that lost took no permit;
//   one that won holds it (the task, or the semaphore_permit it yields).
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting
//   acquire fails with boost::system::system_error(operation_aborted) and takes no permit; a task
//   already cancelled fails at once, even if a permit is available. A permit handed to a waiter at
//   the moment it is cancelled is not lost: either the cancellation came first (the permit goes to
//   the next waiter or the count) or the hand-off did (the acquire succeeds and the task's next
//   suspension fails).
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later release() does not touch it. A permit handed
//   to a task that is destroyed before it resumes goes back to the semaphore.
// - Destroying the semaphore fails its waiting tasks with operation_aborted.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class semaphore : public detail::permit_owner {
 public:
  explicit semaphore(std::size_t initial) : permit_owner(initial, static_cast<std::size_t>(-1)) {}

  // co_await s.acquire(): takes a permit, waiting for one if none is available; the task gives it
  // back with release().
  [[nodiscard]] detail::permit_wait<semaphore> acquire() {
    return wait_for_permit<detail::permit_wait<semaphore>>(*this, "coral::semaphore: acquire",
                                                           detail::wait_kind::semaphore_acquire);
  }

  // auto permit = co_await s.scoped_acquire(): takes a permit; the semaphore_permit gives it back.
  [[nodiscard]] detail::scoped_permit_wait<semaphore_permit, semaphore> scoped_acquire() {
    return wait_for_permit<detail::scoped_permit_wait<semaphore_permit, semaphore>>(
        *this, "coral::semaphore: scoped_acquire", detail::wait_kind::semaphore_acquire);
  }

  // Takes a permit if one is available (never while tasks wait for one); true if it did.
  bool try_acquire() { return try_take(); }

  // Gives `n` permits: to the first `n` waiting tasks (posted to their executors), the rest to the
  // count.
  void release(std::size_t n = 1) { give_back(n, "coral::semaphore: release() past the largest count of permits"); }

  // Permits available now (0 while tasks wait).
  std::size_t available() const { return permit_owner::available(); }
};

}  // namespace coral
