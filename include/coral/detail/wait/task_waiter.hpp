#pragma once

#include <coroutine>
#include <memory>
#include <utility>

#include "coral/detail/wait/race.hpp"
#include "coral/detail/wait/suspended_task.hpp"
#include "coral/detail/wait/waiter_queue.hpp"

namespace coral::detail {

// An operation waiting in the queue of a primitive (a channel's senders or receivers; the waiters
// of a mutex, semaphore or event). It is completed exactly once: whoever unlinks it under the
// primitive's lock (a hand-off, close(), cancellation, shutdown, the primitive's destruction) sets
// `error`, then calls wake() with no lock held.
struct queued_waiter : waiter_node {
  // Set before wake(): empty on success, else why the operation failed (operation_aborted for a
  // cancelled wait; errc::channel_closed for a closed channel).
  boost::system::error_code error;

  // `waker` is the segment of the coral task completing the operation, if any: a waiter on the
  // same executor may then be resumed on the spot.
  virtual void wake(task_segment* waker) noexcept = 0;

  // Under the owner's lock, before a waker unlinks this waiter to wake it. A coral task's waiter
  // whose waker is not on its context takes a pass on its context's gate, left once wake() has
  // posted the task: a context that starts shutting down meanwhile waits for it, so the task is
  // never let go of on the waker's thread after the context's services are gone. False if the
  // context is shutting down: the waiter stays queued, and the shutdown abandons it on the thread
  // destroying the context.
  bool claim_for_wake(task_segment* waker) noexcept {
    if (!gate || (waker && &waker->gate() == gate)) return true;
    if (!gate->enter()) return false;
    pass = gate;
    return true;
  }

  // A claimed waiter that is not woken after all (it stays queued).
  void unclaim() noexcept {
    if (auto* claimed = std::exchange(pass, nullptr)) claimed->leave();
  }

  // The gate of the waiting task's context (a coral task's waiter), and the pass claimed on it.
  context_gate* gate = nullptr;
  context_gate* pass = nullptr;
  // Set when the operation is a branch of a race (when_any, with_timeout): it may only happen if it
  // wins. A waker claims the race before completing the operation; one whose race another branch
  // won is unlinked and fails with operation_aborted, having taken nothing.
  race_ticket ticket;

 protected:
  ~queued_waiter() = default;
};

// Wakes the waiters of a list taken out of a queue (linked through `next`, already unlinked, each
// with its outcome set, or set by `settle(w)` just before), in order, with no lock held: wake() may
// resume a coroutine. When `waker` is a coral task, a waiter on its context may be resumed on this
// stack, and that task's code may destroy the context of a waiter further down the list, whose
// shutdown waits for the pass the waker claimed on it (see queued_waiter::claim_for_wake): the
// waker's own thread, so for ever. So every waiter holding a pass is woken (posted, its pass left)
// before any other.
template <class Waiter, class Settle = void (*)(Waiter&) noexcept>
void wake_each(
    Waiter* list, task_segment* waker, Settle settle = [](Waiter&) noexcept {}) noexcept {
  waiter_node* rest = nullptr;
  waiter_node** rest_tail = &rest;
  for (waiter_node* node = list; node;) {
    auto& w = static_cast<Waiter&>(*std::exchange(node, node->next));
    if (waker && !w.pass) {
      *rest_tail = &w;
      rest_tail = &w.next;
      continue;
    }
    w.next = nullptr;
    settle(w);
    w.wake(waker);
  }
  *rest_tail = nullptr;
  for (waiter_node* node = rest; node;) {
    auto& w = static_cast<Waiter&>(*std::exchange(node, node->next));
    w.next = nullptr;
    settle(w);
    w.wake(waker);
  }
}

// As wake_each, for waiters that all have the same outcome: `error`.
// (Taken out with take_front / take_all, which claim them.)
template <class Waiter>
void wake_all(Waiter* list, boost::system::error_code error, task_segment* waker) noexcept {
  wake_each(list, waker, [error](Waiter& w) noexcept { w.error = error; });
}

// Installed in a waiting operation's cancellation slot. It holds the primitive's shared state, not
// the primitive, so a cancellation after the primitive is gone touches nothing dead; it completes
// the operation only if it still waits. `State::cancel(w)` unlinks `w` under the state's lock if
// it is still queued, sets its error to operation_aborted, and says whether it did: of a hand-off
// and a cancellation that race, the one that unlinks the waiter wins.
template <class State, class Waiter>
struct wait_cancellation {
  // (Asio's slot.emplace<T>(args...) constructs with parentheses: an aggregate would need clang 16.)
  wait_cancellation(std::shared_ptr<State> s, Waiter* w) noexcept : state(std::move(s)), waiter(w) {}
  std::shared_ptr<State> state;
  Waiter* waiter;
  void operator()(asio::cancellation_type) const {
    if (state->cancel(*waiter)) waiter->wake(nullptr);
  }
};

// A coral task waiting in a primitive's queue: what every such wait shares whatever the primitive
// does. It resumes the task on its executor, cancels the wait through the task's cancellation slot
// (level-triggered: a task already cancelled fails before it is queued), and lets go of the task
// if its execution context shuts down while it waits (an external wait of the task's segment).
template <class State, class Waiter>
class task_waiter : public Waiter, public external_wait {
 public:
  using coral_awaitable = void;

  explicit task_waiter(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
  // Movable only before it is awaited (when_all and the like take awaitables by value).
  task_waiter(task_waiter&& other) noexcept : Waiter(), state_(std::move(other.state_)) {}
  task_waiter& operator=(const task_waiter&) = delete;
  ~task_waiter() = default;

  bool await_ready() const noexcept { return false; }

  // For the task's record: the primitive waited on.
  std::int64_t coral_wait_detail() const noexcept {
    return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(state_.get()));
  }

  // Makes the operation a branch of a race: it happens only if it wins (see queued_waiter::ticket).
  void enter_race(race_ticket t) noexcept { this->ticket = t; }

  void wake(task_segment* waker) noexcept override {
    resume_task(waker, std::exchange(this->pass, nullptr));  // (this object may go with the task)
  }

  void abandon() noexcept override {
    if (state_->cancel(*this)) task_.let_go();  // may destroy the frame holding this awaiter
  }

 protected:
  // Runs `operation(state, waker)` (the primitive's attempt, which either completes at once or
  // links this waiter); returns whether the task must suspend. Everything a waker needs is in place
  // before the operation can link this waiter. Throws operation_aborted, with nothing attempted, if
  // the task is cancelled.
  template <class Promise, class Operation>
  bool suspend_on(std::coroutine_handle<Promise> coroutine, Operation operation) {
    memory_.prepare(coroutine.promise().segment().executor_target_kind());
    task_.suspend(coroutine);
    task_segment& segment = task_.segment();
    this->gate = &segment.gate();
    if (auto slot = segment.op_slot(); slot.is_connected()) {
      slot.template emplace<wait_cancellation<State, Waiter>>(state_, this);
    }
    segment.set_external_wait(this);
    bool done;
    try {
      done = operation(*state_, &segment);
    } catch (...) {
      finish_waiting();
      throw;
    }
    if (done) {
      finish_waiting();
      return false;
    }
    return true;
  }

  // A select's first pass over its branches, before anything waits: the operation is attempted
  // without waiting (nothing is queued). True if it happened or failed at once; await_resume
  // then says which, without the task having suspended.
  template <class Operation>
  bool poll_with(task_segment& waker, Operation operation) {
    polled_ = operation(*state_, &waker);
    return polled_;
  }

  // Resumes the task (see suspended_task::resume_from), then leaves `claimed`, the pass its waker
  // claimed on the task's gate, if any. Nothing may touch this object afterwards.
  void resume_task(task_segment* waker, context_gate* claimed) noexcept {
    task_.resume_from(waker, claimed != nullptr, &memory_);
    if (claimed) claimed->leave();
  }

  // Lets go of the task without resuming it (its wait was abandoned). May destroy the frame that
  // holds this object.
  void let_go_task() noexcept { task_.let_go(); }

  // On the task's executor, once the operation is complete (waited for, or polled).
  void finish() noexcept {
    if (!polled_) finish_waiting();
  }

  // For a branch of a race (an awaiter's lost_race): true, with the wait finished, if the operation
  // failed with operation_aborted and so did not happen (it lost its race, or was cancelled).
  bool finish_if_aborted() noexcept {
    if (this->error != asio::error::operation_aborted) return false;
    finish();
    return true;
  }

  // On the task's executor, once the operation is complete.
  void finish_waiting() noexcept {
    task_segment& segment = task_.segment();
    segment.set_external_wait(nullptr);
    segment.slot().clear();
    task_.let_go();
  }

  std::shared_ptr<State> state_;

 private:
  suspended_task task_;
  resumption_memory memory_;  // the waker's post of the task
  bool polled_ = false;
};

}  // namespace coral::detail
