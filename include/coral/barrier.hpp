#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "coral/detail/sync/sync_awaiters.hpp"

namespace coral {

// A reusable meeting point for a fixed number of coral tasks, as std::barrier is for threads: each
// phase completes once every participant has arrived, then the next phase begins. Waiting suspends
// the task, never its thread.
//
//   coral::barrier sync(3);                          // three participants
//   coral::barrier sync(3, [&]() noexcept { ... });  // with a completion step, run once per phase
//   co_await sync.arrive_and_wait();                 // arrives; returns once the phase completed
//   sync.arrive_and_drop();                          // arrives, and leaves for the phases after it
//
// Semantics:
// - A phase completes with the arrival that makes the participants' count: an arrive_and_wait()
//   or arrive_and_drop(). Then the completion step runs once, in that arrival's call (on the
//   executor of the task whose arrive_and_wait() completed the phase, before that task goes on; on
//   the thread that called arrive_and_drop()), with no lock of coral's held, and only then is any
//   task that waited in the phase woken: in the order they arrived, each posted to its own
//   executor, never resumed inside the arriving call. The next phase has begun when it runs; each
//   participant arrives once per phase, as with std::barrier (an arrival past the participants'
//   count throws std::logic_error and changes nothing).
// - The completion must not throw (as std::barrier's: std::is_nothrow_invocable). It may use the
//   barrier (arrive_and_drop() from it counts in the next phase).
// - arrive_and_drop() never waits; from the next phase on there is one participant fewer.
// - arrive_and_wait() arrives when it is awaited. A wait that fails — cancelled (job.cancel(), a
//   completion token's slot, a parent's cancellation: operation_aborted), lost in a race
//   (when_any, `||`), timed out (with_timeout) — withdraws its arrival: the phase does not count it
//   and waits for that participant to arrive again. A wait whose phase completed first succeeds;
//   in a race it is the winner (the arrival that completes a phase claims the races of all its
//   waiters together). So a task that sees a failed wait has not arrived, and one that sees its
//   phase complete has. A task already cancelled fails at once, without arriving.
// - If the execution context of a waiting task shuts down, the wait is abandoned: withdrawn as a
//   cancelled one is if its phase had not completed, else left counted; the task's frames are
//   destroyed with the context, and nothing touches them afterwards. (The other participants then
//   wait for an arrival that may never come, as threads at a std::barrier wait for one that died.)
// - Destroying the barrier fails its waiting tasks with operation_aborted.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently).
template <class CompletionFunction = detail::no_completion>
class barrier {
  static_assert(std::is_nothrow_invocable_v<CompletionFunction&>,
                "coral::barrier: the completion must be callable with no arguments and noexcept");

 public:
  explicit barrier(std::size_t participants, CompletionFunction completion = CompletionFunction())
      : state_(std::make_shared<detail::barrier_state<CompletionFunction>>(participants, std::move(completion))) {}
  ~barrier() { state_->abort_all(); }
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;

  // co_await b.arrive_and_wait(): arrives in the phase in progress, returns once it completed.
  [[nodiscard]] detail::barrier_awaiter<CompletionFunction> arrive_and_wait() {
    return detail::barrier_awaiter<CompletionFunction>(state_, "coral::barrier: arrive_and_wait");
  }

  // Arrives without waiting, and is no participant of the phases after this one.
  void arrive_and_drop() { state_->arrive_and_drop(); }

  // How many phases have completed (a snapshot).
  std::uint64_t completed_phases() const { return state_->phase(); }

 private:
  std::shared_ptr<detail::barrier_state<CompletionFunction>> state_;
};

}  // namespace coral
