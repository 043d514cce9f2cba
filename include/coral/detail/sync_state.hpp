#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "coral/detail/task_waiter.hpp"

namespace coral::detail {

// What the shared state of every synchronisation primitive (async_mutex, semaphore, event) has:
// a lock and one FIFO of waiting tasks. The lock is held only to change the state and relink
// waiters; waking them happens after it is unlocked.
//
// A waiter that is a branch of a race (when_any, with_timeout) is granted a permit, or told that
// its event is set, only if that claims its race; one whose race another branch won is unlinked
// and fails with operation_aborted, and what it would have had goes to the next waiter. So a lock
// or acquire that lost took nothing, and a wait that lost consumed nothing.
class sync_state {
 public:
  sync_state() = default;
  sync_state(const sync_state&) = delete;
  sync_state& operator=(const sync_state&) = delete;

  // Unlinks `w` if it still waits; true if it did (the caller then completes it as cancelled).
  bool cancel(queued_waiter& w) {
    std::lock_guard lock(mutex_);
    if (!w.linked) return false;
    waiters_.remove(w);
    w.error = asio::error::operation_aborted;
    return true;
  }

  // The primitive is being destroyed: every waiter fails with operation_aborted.
  void abort_all() noexcept {
    queued_waiter* waiters;
    {
      std::lock_guard lock(mutex_);
      waiters = waiters_.take_all(static_cast<task_segment*>(nullptr));
    }
    wake_all(waiters, asio::error::operation_aborted, nullptr);
  }

 protected:
  ~sync_state() = default;

  // Under the lock: unlinks up to `n` waiters from the front that `waker` may wake and whose race,
  // if any, this wake-up wins (left in `n`: how many more were asked for than there were). Those
  // whose race another branch won are unlinked onto `losers`. Both lists are linked through `next`.
  queued_waiter* take_winners(std::size_t& n, task_segment* waker, queued_waiter*& losers) noexcept {
    // (A waiter whose context is shutting down stays for the shutdown to take out.)
    return waiters_.take_front(n, waker, losers, [](queued_waiter& w) noexcept { return w.ticket.claim(); });
  }

  // Completes what take_winners took out, with no lock held.
  static void wake_taken(queued_waiter* winners, queued_waiter* losers, task_segment* waker) noexcept {
    wake_all(losers, asio::error::operation_aborted, nullptr);
    wake_all(winners, {}, waker);
  }

  mutable std::mutex mutex_;
  waiter_queue<queued_waiter> waiters_;
};

// A request for permits waiting in a permit_state: how many it takes at once.
struct permit_request : queued_waiter {
  std::size_t weight = 1;

 protected:
  ~permit_request() = default;
};

// A count of permits and the tasks waiting for some, served first come, first served: the state of
// a semaphore, of an async_mutex (one permit), and of a shared_mutex (a reader takes one permit, a
// writer every one of them). A request that does not fit holds back every request behind it, so a
// waiting writer holds back the readers that come after it.
class permit_state : public sync_state {
 public:
  // `limit`: the most permits there can be (a mutex: 1). `whole_is_exclusive`: a hold of all `limit`
  // permits is one holder's (a shared_mutex's writer), which a give-back of fewer cannot be part of.
  permit_state(std::size_t permits, std::size_t limit, bool whole_is_exclusive = false) noexcept
      : permits_(permits), limit_(limit), whole_is_exclusive_(whole_is_exclusive) {}

  // Takes `w.weight` permits at once (true) or queues `w` (false) until a give-back hands them to
  // it. True with w.error set to operation_aborted: `w`'s race was already won by another branch.
  bool acquire(permit_request& w) {
    std::lock_guard lock(mutex_);
    if (waiters_.empty() && permits_ >= w.weight) {
      if (!w.ticket.claim()) {
        w.error = asio::error::operation_aborted;
        return true;
      }
      take(w.weight);
      return true;
    }
    waiters_.push_back(w);
    return false;
  }

  // Takes `weight` permits if they are free and nobody waits (never before a waiting task).
  bool try_acquire(std::size_t weight = 1) {
    std::lock_guard lock(mutex_);
    if (!waiters_.empty() || permits_ < weight) return false;
    take(weight);
    return true;
  }

  // Unlinks `w` if it still waits; true if it did (the caller then completes it as cancelled).
  // The requests it held back that now fit are granted.
  bool cancel(queued_waiter& w) {
    queued_waiter *granted, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!w.linked) return false;
      waiters_.remove(w);
      w.error = asio::error::operation_aborted;
      granted = grant_waiting(nullptr, losers);
    }
    wake_taken(granted, losers, nullptr);
    return true;
  }

  // Gives back `n` permits by hand (unlock(), release()): the first waiting requests that fit take
  // them (each is unlinked, so its cancellation can no longer win), the rest go to the count; then
  // those waiters are woken, in order, with no lock held. False, with nothing changed, if no
  // holder can be giving them back: permits beyond the limit (an unlock() of a mutex nobody
  // holds), or a part of an exclusive hold (unlock_shared() while a writer holds).
  bool give_back(std::size_t n, task_segment* waker) {
    queued_waiter *granted, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (n > limit_ - permits_ || (whole_is_exclusive_ && permits_ == 0 && n < limit_)) return false;
      permits_ += n;
      granted = grant_waiting(waker, losers);
    }
    wake_taken(granted, losers, waker);
    return true;
  }

  // Gives back permits that were held (a guard's, a handed-over one nobody resumed to take): never
  // throws. `grant`: for an exclusive hold (all `limit` permits: a mutex's lock, a writer's), which
  // grant it was (last_grant() when it was taken): one given back by hand already gives nothing,
  // whoever holds it now. A shared hold gives nothing while a writer holds (it was given back by
  // hand already), and the count stays at most at its limit.
  void give_back_held(std::size_t n, std::uint64_t grant) noexcept {
    queued_waiter *granted, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (n == limit_ ? permits_ != 0 || grant != last_grant() : whole_is_exclusive_ && permits_ == 0) return;
      permits_ += std::min(n, limit_ - permits_);
      granted = grant_waiting(nullptr, losers);
    }
    wake_taken(granted, losers, nullptr);
  }

  // How many requests were ever granted: for an exclusive hold, the one its holder has (it changes
  // only when the hold goes to someone else).
  // (Read without the lock by the holder, which its grant happened before.)
  std::uint64_t last_grant() const noexcept { return grants_.load(std::memory_order_relaxed); }

  std::size_t available() const {
    std::lock_guard lock(mutex_);
    return permits_;
  }

  std::size_t limit() const noexcept { return limit_; }

 private:
  void take(std::size_t weight) noexcept {
    permits_ -= weight;
    grants_.fetch_add(1, std::memory_order_relaxed);
  }

  // Under the lock: unlinks the requests from the front that fit in the free permits and whose
  // race, if any, this grant wins (those whose race another branch won go to `losers`).
  queued_waiter* grant_waiting(task_segment* waker, queued_waiter*& losers) noexcept {
    // (A waiter whose context is shutting down stays for the shutdown to take out.)
    return waiters_.take_front_while(
        waker, losers, [this](queued_waiter& w) noexcept { return weight_of(w) <= permits_; },
        [this](queued_waiter& w) noexcept {
          if (!w.ticket.claim()) return false;
          take(weight_of(w));
          return true;
        });
  }

  // (Every waiter of a permit_state is a permit_request.)
  static std::size_t weight_of(queued_waiter& w) noexcept { return static_cast<permit_request&>(w).weight; }

  // Permits nobody holds. Invariant: the first waiting request does not fit in them (a give-back
  // goes to waiters first), so try_acquire() never overtakes a waiter; but those whose context is
  // shutting down, which the shutdown takes out.
  std::size_t permits_;
  const std::size_t limit_;
  const bool whole_is_exclusive_;
  std::atomic<std::uint64_t> grants_{0};  // (changed under the lock)
};

// A manual-reset flag and the tasks waiting for it to be set: the state of an event.
class event_state : public sync_state {
 public:
  // Completes at once (true) if the flag is set, else queues `w` (false) until set(). True with
  // w.error set to operation_aborted: `w`'s race was already won by another branch.
  bool wait(queued_waiter& w) {
    std::lock_guard lock(mutex_);
    if (set_) {
      if (!w.ticket.claim()) w.error = asio::error::operation_aborted;
      return true;
    }
    waiters_.push_back(w);
    return false;
  }

  // Sets the flag and wakes every waiter, in order, with no lock held.
  void set() {
    queued_waiter *waiters, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      set_ = true;
      std::size_t all = static_cast<std::size_t>(-1);
      waiters = take_winners(all, nullptr, losers);
    }
    wake_taken(waiters, losers, nullptr);
  }

  void reset() {
    std::lock_guard lock(mutex_);
    set_ = false;
  }

  bool is_set() const {
    std::lock_guard lock(mutex_);
    return set_;
  }

 private:
  // Invariant: while it is true, no task waits (set() wakes them all; wait() does not queue),
  // but those whose context is shutting down, which the shutdown takes out.
  bool set_ = false;
};

// The tasks waiting on a condition_variable: a notification wakes the first of them whose race,
// if any, it wins (one whose race another branch won is skipped, and fails with
// operation_aborted: a notification is never spent on a wait that lost).
class condition_state : public sync_state {
 public:
  void wait(queued_waiter& w) {
    std::lock_guard lock(mutex_);
    waiters_.push_back(w);
  }

  // Wakes up to `n` waiters, in order, with no lock held.
  void notify(std::size_t n) {
    queued_waiter *woken, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      woken = take_winners(n, nullptr, losers);
    }
    wake_taken(woken, losers, nullptr);
  }
};

// A count that only goes down, and the tasks waiting for it to reach zero: the state of a latch.
class latch_state : public sync_state {
 public:
  explicit latch_state(std::size_t count) noexcept : count_(count) {}

  // Completes at once (true) if the count is zero, else queues `w` (false) until it is. True with
  // w.error set to operation_aborted: `w`'s race was already won by another branch.
  bool wait(queued_waiter& w) {
    std::lock_guard lock(mutex_);
    if (count_ == 0) {
      if (!w.ticket.claim()) w.error = asio::error::operation_aborted;
      return true;
    }
    waiters_.push_back(w);
    return false;
  }

  // Lowers the count by `n`; at zero, wakes every waiter, in order, with no lock held. More than
  // is left throws std::logic_error and changes nothing.
  void count_down(std::size_t n) {
    queued_waiter *waiters = nullptr, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (n > count_) throw std::logic_error("coral::latch: count_down() below zero");
      count_ -= n;
      if (count_ != 0 || n == 0) return;
      std::size_t all = static_cast<std::size_t>(-1);
      waiters = take_winners(all, nullptr, losers);
    }
    wake_taken(waiters, losers, nullptr);
  }

  bool is_set() const {
    std::lock_guard lock(mutex_);
    return count_ == 0;
  }

 private:
  // Invariant: while it is zero, no task waits (the last count_down() wakes them all; wait()
  // does not queue), but those whose context is shutting down, which the shutdown takes out.
  std::size_t count_;
};

}  // namespace coral::detail
