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

// A count of permits and the tasks waiting for one, served first come, first served: the state of
// a semaphore, and of an async_mutex (one permit).
class permit_state : public sync_state {
 public:
  // `limit`: the most permits there can be (a mutex: 1); giving back more is a logic error.
  permit_state(std::size_t permits, std::size_t limit) noexcept : permits_(permits), limit_(limit) {}

  // Takes a permit at once (true) or queues `w` (false) until give_back() hands it one. True with
  // w.error set to operation_aborted: `w`'s race was already won by another branch.
  bool acquire(queued_waiter& w) {
    std::lock_guard lock(mutex_);
    if (permits_ > 0) {
      if (!w.ticket.claim()) {
        w.error = asio::error::operation_aborted;
        return true;
      }
      --permits_;
      grants_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    waiters_.push_back(w);
    return false;
  }

  bool try_acquire() {
    std::lock_guard lock(mutex_);
    if (permits_ == 0) return false;
    --permits_;
    grants_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // Hands `n` permits to the first `n` waiters that may take them (each is unlinked, so its
  // cancellation can no longer win), the rest to the count; then wakes those waiters, in order,
  // with no lock held. Permits beyond the limit (an unlock() of a mutex nobody holds) throw
  // std::logic_error and change nothing: they would make a second holder.
  void give_back(std::size_t n, task_segment* waker) {
    queued_waiter *granted, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (n > limit_ - permits_)
        throw std::logic_error(limit_ == 1 ? "coral::async_mutex: unlock() of a mutex nobody holds"
                                           : "coral::semaphore: release() past the largest count of permits");
      const std::size_t given = n;
      granted = take_winners(n, waker, losers);
      grants_.fetch_add(given - n, std::memory_order_relaxed);
      permits_ += n;  // what no waiter took
    }
    wake_taken(granted, losers, waker);
  }

  // Gives back permits that were held (a guard's, a handed-over one nobody resumed to take): never
  // throws. `grant`: for a mutex, which grant the lock was (last_grant() when it was taken): one
  // given back by hand already gives nothing, whoever holds the mutex now. A semaphore's count
  // stays at most at its limit.
  void give_back_held(std::size_t n, std::uint64_t grant) noexcept {
    queued_waiter *granted, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (limit_ == 1 && (permits_ != 0 || grant != last_grant())) return;
      n = std::min(n, limit_ - permits_);
      const std::size_t given = n;
      granted = take_winners(n, nullptr, losers);
      grants_.fetch_add(given - n, std::memory_order_relaxed);
      permits_ += n;
    }
    wake_taken(granted, losers, nullptr);
  }

  // How many permits were ever granted: for a mutex, the lock its holder has (it changes only
  // when the lock goes to someone else).
  // (Read without the lock by the holder, which its grant happened before.)
  std::uint64_t last_grant() const noexcept { return grants_.load(std::memory_order_relaxed); }

  std::size_t available() const {
    std::lock_guard lock(mutex_);
    return permits_;
  }

 private:
  // Permits nobody holds. Invariant: if it is above zero, no task waits (a permit given back goes to
  // a waiter first), so try_acquire() never overtakes a waiter; but those whose context is
  // shutting down, which the shutdown takes out.
  std::size_t permits_;
  const std::size_t limit_;
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
