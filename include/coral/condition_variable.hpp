#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "coral/async_mutex.hpp"
#include "coral/detail/sync/sync_awaiters.hpp"
#include "coral/task.hpp"

namespace coral {

// A condition variable for coral tasks, used with an async_mutex held in the std style, as
// std::condition_variable is used with a std::mutex: waiting suspends the task, never its thread.
//
//   coral::async_mutex m;
//   coral::condition_variable cv;
//   std::deque<int> queue;
//
//   co_await m.lock();                                          // consumer
//   co_await cv.wait(m, [&] { return !queue.empty(); });        // m is held again on return
//   int item = queue.front(); queue.pop_front();
//   m.unlock();
//
//   co_await m.lock();                                          // producer
//   queue.push_back(42);
//   m.unlock();
//   cv.notify_one();                                            // or notify_all()
//
// Semantics:
// - wait(m) must be awaited by a task that holds m in the std style (m.lock() or try_lock(); not
//   through a guard, whose lock, once unlocked and locked again, is a new one it does not give
//   back). It queues the task on the condition, then unlocks m: a notify from whoever
//   locks m next finds the task waiting. Once the task is woken it locks m again, and only then
//   does the await return. If m is not locked at all, wait() throws std::logic_error at once.
// - The await returns holding m also when it fails: a cancelled wait, or one that timed out under
//   with_timeout or lost a when_any, first locks m again, then throws (operation_aborted, or what
//   the timeout throws). Locking m again is not cancellable (a task that is cancelled while it
//   waits for m still waits for m).
// - wait(m, pred) is `while (!pred()) co_await wait(m);`: pred runs on the task's executor with m
//   held; on return pred() was true and m is held. It is a task of its own (one frame per call).
// - notify_one() wakes the task that has waited longest, notify_all() every waiting task; they
//   do nothing if no task waits (a notification is not remembered). They may be called with or
//   without m held, from any thread or any code. The woken tasks then compete for m with
//   everyone else; spurious wake-ups are allowed as with std::condition_variable (check a
//   predicate, or use wait(m, pred)).
// - A notification is not lost to a wait that fails: a notify_one() and a cancellation (or a lost
//   race) that meet are decided under one lock: either the cancellation came first (the wait
//   consumed nothing, the notification wakes the next waiting task) or the notification did (the
//   wait succeeds, and the task's next suspension fails; in a race, the wait's branch wins).
//   wait(m, pred) is a task: under with_timeout, one that completes all the same is returned, not
//   dropped; but as a branch of when_any / `||` it decides the race only when it ends, so a
//   notification that woke it while another branch won is spent on a dropped branch. There, race
//   a plain wait(m) in a loop of your own, or use notify_all().
// - wait(m) can be raced and timed out (when_any, with_timeout, `||`): the task holds m after the
//   race however it ends. Two waits on the same mutex in one race cannot both lock it again: the
//   race would wait for itself.
// - The woken task is resumed on its own executor: posted there (from whatever thread notifies,
//   or unlocks m), never resumed inside notify_one() / notify_all() / unlock(). No lock of coral's
//   is held while a task is resumed.
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later notify (or unlock of m) does not touch it.
// - Destroying the condition variable fails its waiting tasks with operation_aborted (after they
//   lock m again). m must outlive every wait on it.
//
// Cost: a wait(m) is one awaiter in the awaiting task's frame (no allocation); a notified task is
// queued twice, on the condition and then on m, and resumed once.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
class condition_variable {
 public:
  condition_variable() : state_(std::make_shared<detail::condition_state>()) {}
  ~condition_variable() { state_->abort_all(); }
  condition_variable(const condition_variable&) = delete;
  condition_variable& operator=(const condition_variable&) = delete;

  // co_await cv.wait(m): unlocks m, waits for a notification, locks m again.
  [[nodiscard]] detail::condition_awaiter wait(async_mutex& m) {
    return detail::condition_awaiter(state_, m, "coral::condition_variable: wait");
  }

  // co_await cv.wait(m, pred): waits until pred() is true, with m held.
  template <class Predicate>
  [[nodiscard]] task<void> wait(async_mutex& m, Predicate pred) {
    while (!pred()) co_await wait(m);
  }

  // Wakes the task that has waited longest, if any (posted to its executor).
  void notify_one() { state_->notify(1); }
  // Wakes every waiting task.
  void notify_all() { state_->notify(static_cast<std::size_t>(-1)); }

 private:
  std::shared_ptr<detail::condition_state> state_;
};

}  // namespace coral
