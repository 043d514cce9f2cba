#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "coral/detail/join/held_for_task.hpp"
#include "coral/detail/sync/sync_state.hpp"

namespace coral::detail {

// Throws the error a primitive's wait completed with, if any.
inline void throw_if_failed(const boost::system::error_code& error, const char* what) {
  if (error) [[unlikely]]
    throw boost::system::system_error(error, what);
}

// co_await of a permit (semaphore::acquire, async_mutex::lock) by a coral task. A permit handed to
// this waiter belongs to the task once it resumes; if the task never resumes (its execution
// context shut down between the hand-off and the resumption), the destructor hands the permit on.
class permit_awaiter : public task_waiter<permit_state, permit_request> {
 public:
  // `weight`: how many permits it takes (a shared_mutex's writer: all of them).
  permit_awaiter(std::shared_ptr<permit_state> state, const char* what, wait_kind kind, std::size_t weight) noexcept
      : task_waiter(std::move(state)), what_(what), kind_(kind) {
    this->weight = weight;
  }
  // Movable only before it is awaited (when_all and the like take awaitables by value).
  permit_awaiter(permit_awaiter&& other) noexcept
      : task_waiter(std::move(other)), what_(other.what_), kind_(other.kind_) {
    this->weight = other.weight;
  }
  ~permit_awaiter() {
    if (attempted_ && !this->error) state_->give_back_held(this->weight, state_->last_grant());
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine, [this](permit_state& s, task_segment*) {
      attempted_ = true;
      return s.acquire(*this);
    });
  }

  // A select's first pass: takes a permit if one is free (never before a waiting task).
  bool poll(task_segment& waker) {
    return this->poll_with(waker,
                           [this](permit_state& s, task_segment*) { return attempted_ = s.try_acquire(this->weight); });
  }

  void await_resume() {
    this->finish();
    attempted_ = false;  // the permit, if any, is the task's now
    throw_if_failed(this->error, what_);
  }

  // For a branch of a race, instead of await_resume(): true, with the wait finished, if the
  // acquire did not happen (operation_aborted: it lost, or was cancelled); no permit was taken.
  bool lost_race() noexcept { return this->finish_if_aborted(); }

  wait_kind coral_wait_kind() const noexcept { return kind_; }

 private:
  const char* what_;
  wait_kind kind_;
  bool attempted_ = false;  // acquire() ran and its permit has not reached the task yet
};

// What async_mutex, semaphore and shared_mutex are made of: the state of their permits (a mutex is
// a semaphore of one permit; a shared_mutex's writer takes all of them, a reader one). Their
// waiting tasks fail with operation_aborted when they go. Public, so that a guard's deleter can
// reach it from the owner; every member is for the derived class.
class permit_owner {
 public:
  permit_owner(const permit_owner&) = delete;
  permit_owner& operator=(const permit_owner&) = delete;

 protected:
  permit_owner(std::size_t permits, std::size_t limit, bool whole_is_exclusive = false)
      : state_(std::make_shared<permit_state>(permits, limit, whole_is_exclusive)) {}
  ~permit_owner() { state_->abort_all(); }

  template <class Awaiter, class Owner>
  Awaiter wait_for_permit(Owner& owner, const char* what, wait_kind kind, std::size_t weight = 1) {
    return Awaiter(state_, owner, what, kind, weight);
  }
  bool try_take(std::size_t weight = 1) { return state_->try_acquire(weight); }
  // Throws std::logic_error(misuse), and gives nothing back, if no holder can be giving them back
  // (see permit_state::give_back).
  void give_back(std::size_t n, const char* misuse) {
    if (!state_->give_back(n, nullptr)) throw std::logic_error(misuse);
  }
  std::size_t all_permits() const noexcept { return state_->limit(); }
  std::size_t available() const { return state_->available(); }

 private:
  template <class Owner>
  friend class permit_guard;
  friend class condition_awaiter;
  std::shared_ptr<permit_state> state_;
};

// What async_mutex_lock and semaphore_permit are made of: owning one permit of an Owner (a
// permit_owner), given back when the guard goes. Move-only; a moved-from guard owns nothing.
template <class Owner>
class permit_guard {
 protected:
  // (Made by the holder, right after it took the permit: the grant it records is its own.)
  // `weight`: how many permits the hold is.
  explicit permit_guard(Owner& owner, std::size_t weight = 1) noexcept
      : owner_(&owner, giver{static_cast<permit_owner&>(owner).state_->last_grant(), weight}) {}

  Owner* owner() const noexcept { return owner_.get(); }
  void give_back_now() noexcept { owner_.reset(); }
  // The permit stays taken; whoever it is handed to gives it back by hand.
  Owner* keep_taken() noexcept { return owner_.release(); }
  // The permit, as a join's result keeps it (the guard still owns it: keep_taken() once the share
  // is kept).
  held_share share() const noexcept {
    return {static_cast<permit_owner*>(owner_.get()), &give_back_share, owner_.get_deleter().grant,
            owner_.get_deleter().weight};
  }

 private:
  struct giver {
    // Which grant of a mutex this guard holds: a guard whose lock was given back by hand as well
    // gives nothing, also when another holder has the mutex by then (rather than unlock that
    // holder's lock, or throw from a destructor).
    std::uint64_t grant = 0;
    std::size_t weight = 1;
    void operator()(Owner* owner) const noexcept {
      static_cast<permit_owner*>(owner)->state_->give_back_held(weight, grant);
    }
  };
  static void give_back_share(void* owner, std::uint64_t grant, std::size_t weight) noexcept {
    static_cast<permit_owner*>(owner)->state_->give_back_held(weight, grant);
  }
  std::unique_ptr<Owner, giver> owner_;
};

// A permit taken by a join's branch in the std style (`when_all(m.lock(), work())`): the branch's
// result owns it (held_for_task), so a join that drops the result (a sibling failed) gives it
// back; a join that hands it over leaves it taken, for the task to give back by hand, or passes it
// on to its own result, when that is a branch of a join around it.
template <class Owner>
class held_permit : public permit_guard<Owner> {
 public:
  using coral_held_for_task = void;
  held_permit(Owner& owner, std::size_t weight) noexcept : permit_guard<Owner>(owner, weight) {}
  void hand_over_holds(held_shares* into) {
    if (into) into->add(this->share());
    static_cast<void>(this->keep_taken());
  }
};

// co_await m.lock() / s.acquire(), the std style: the await yields nothing, and the permit is the
// task's until it gives it back by hand (m.unlock(), s.release()). As a join's argument, its result
// is a held_permit (coral_join_resume), so that a join that drops it gives the permit back.
template <class Owner>
class permit_wait : public permit_awaiter {
 public:
  using coral_join_result = held_permit<Owner>;

  permit_wait(std::shared_ptr<permit_state> state, Owner& owner, const char* what, wait_kind kind,
              std::size_t weight) noexcept
      : permit_awaiter(std::move(state), what, kind, weight), owner_(&owner) {}

  void await_resume() { permit_awaiter::await_resume(); }

  held_permit<Owner> coral_join_resume() {
    permit_awaiter::await_resume();
    return held_permit<Owner>(*owner_, this->weight);
  }

 private:
  Owner* owner_;
};

// co_await m.scoped_lock() / s.scoped_acquire(): the await yields the guard that owns the lock or
// permit (so that a result nobody takes gives it back).
template <class Guard, class Owner>
class scoped_permit_wait : public permit_awaiter {
 public:
  scoped_permit_wait(std::shared_ptr<permit_state> state, Owner& owner, const char* what, wait_kind kind,
                     std::size_t weight) noexcept
      : permit_awaiter(std::move(state), what, kind, weight), owner_(&owner) {}

  [[nodiscard]] Guard await_resume() {
    permit_awaiter::await_resume();
    return Guard(*owner_, std::adopt_lock);
  }

 private:
  Owner* owner_;
};

// co_await cv.wait(m) by a coral task that holds m in the std style: queues the task on the
// condition, then unlocks m (in that order: a notify by whoever locks m next finds the task
// waiting); once the wait on the condition is over (notified, cancelled, beaten in its race, the
// condition destroyed), locks m again before the task resumes, so the task resumes holding m
// whatever the outcome. The re-lock is a second wait, in m's queue, which cancellation does not
// reach (it is part of ending the wait) and no race claims.
class condition_awaiter : public task_waiter<condition_state, queued_waiter> {
 public:
  condition_awaiter(std::shared_ptr<condition_state> state, permit_owner& mutex, const char* what) noexcept
      : task_waiter(std::move(state)), mutex_(mutex.state_), what_(what) {
    relock_.awaiter = this;
  }
  // Movable only before it is awaited (when_all and the like take awaitables by value).
  condition_awaiter(condition_awaiter&& other) noexcept
      : task_waiter(std::move(other)), mutex_(std::move(other.mutex_)), what_(other.what_) {
    relock_.awaiter = this;
  }
  ~condition_awaiter() {
    // (The task is destroyed between the re-lock and its resumption: the lock is handed on.)
    if (relock_attempted_ && !relock_.error) mutex_->give_back_held(1, mutex_->last_grant());
  }

  static constexpr wait_kind coral_wait_kind() noexcept { return wait_kind::condition_wait; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    // (Checked before the task is queued: once it is, a notify may take it.)
    if (mutex_->available() != 0)
      throw std::logic_error("coral::condition_variable: wait() while its mutex is unlocked");
    return this->suspend_on(coroutine, [this](condition_state& s, task_segment*) {
      s.wait(*this);
      // (False only if something else unlocked m meanwhile, which is that code's misuse.)
      static_cast<void>(mutex_->give_back(1, nullptr));
      return false;
    });
  }

  // The task holds m again: throws what ended the wait on the condition, if that failed.
  void await_resume() {
    this->finish();
    relock_attempted_ = false;  // the lock is the task's again
    throw_if_failed(relock_.error, "coral::condition_variable: wait (its mutex was destroyed)");
    throw_if_failed(this->error, what_);
  }

  // For a branch of a race, instead of await_resume(): true, with the wait finished (and m locked
  // again), if the wait lost its race or was cancelled; it consumed no notification.
  bool lost_race() noexcept {
    if (relock_.error || !this->finish_if_aborted()) return false;
    relock_attempted_ = false;
    return true;
  }

  // The wait on the condition is over: locks m again, and resumes the task once it holds it.
  void wake(task_segment* waker) noexcept override {
    context_gate* claimed = std::exchange(this->pass, nullptr);
    if (!claimed) {
      // (Ended by a cancellation, which claims no pass: one is taken here, so that the shutdown of
      // the task's context waits until the re-lock is queued, where it can find it.)
      if (!this->gate->enter()) return this->let_go_task();
      claimed = this->gate;
    }
    relock_.gate = this->gate;
    relock_attempted_ = true;
    if (mutex_->acquire(relock_)) return this->resume_task(waker, claimed);
    claimed->leave();  // (the task may be resumed by now: nothing here may touch it)
  }

  void abandon() noexcept override {
    // (Queued on the condition, or for the re-lock; if neither, a wake-up holds a pass and the
    // shutdown only comes once it has queued the re-lock or posted the task.)
    if (state_->cancel(*this) || mutex_->cancel(relock_)) this->let_go_task();
  }

 private:
  struct relock_request final : permit_request {
    condition_awaiter* awaiter = nullptr;
    void wake(task_segment* waker) noexcept override {
      awaiter->resume_task(waker, std::exchange(this->pass, nullptr));
    }
  };

  std::shared_ptr<permit_state> mutex_;
  const char* what_;
  relock_request relock_;
  bool relock_attempted_ = false;  // the re-lock was asked for and has not reached the task yet
};

// co_await event.wait() / latch.wait() / barrier.arrive_and_wait() by a coral task: waits until
// the State is set (an event set, a latch at zero, the barrier's phase completed); takes nothing.
// (watch_changed_awaiter is one whose flag is per receiver: a version newer than it read.)
template <class State, wait_kind Kind>
class flag_awaiter : public task_waiter<State, queued_waiter> {
 public:
  flag_awaiter(std::shared_ptr<State> state, const char* what) noexcept
      : task_waiter<State, queued_waiter>(std::move(state)), what_(what) {}
  flag_awaiter(flag_awaiter&& other) noexcept
      : task_waiter<State, queued_waiter>(std::move(other)), what_(other.what_) {}
  static constexpr wait_kind coral_wait_kind() noexcept { return Kind; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine, [this](State& s, task_segment*) { return s.wait(*this); });
  }

  // A select's first pass: done if the flag is set.
  bool poll(task_segment& waker) {
    return this->poll_with(waker, [](State& s, task_segment*) { return s.is_set(); });
  }

  void await_resume() {
    this->finish();
    throw_if_failed(this->error, what_);
  }

  // For a branch of a race, instead of await_resume(): true, with the wait finished, if the wait
  // did not happen (operation_aborted: it lost, or was cancelled).
  bool lost_race() noexcept { return this->finish_if_aborted(); }

 private:
  const char* what_;
};

using event_awaiter = flag_awaiter<event_state, wait_kind::event_wait>;
using latch_awaiter = flag_awaiter<latch_state, wait_kind::latch_wait>;
// (Its await arrives: the flag is the phase's completion.)
template <class Completion>
using barrier_awaiter = flag_awaiter<barrier_state<Completion>, wait_kind::barrier_wait>;

}  // namespace coral::detail
