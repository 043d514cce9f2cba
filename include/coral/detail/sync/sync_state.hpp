#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "coral/detail/wait/task_waiter.hpp"

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
    if (!w.linked()) return false;
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
      if (!w.linked()) return false;
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

// The participants of a barrier and the tasks waiting for their phase to complete: the state of a
// barrier but for its completion step (barrier_state<Completion>).
//
// A waiter withdraws its arrival when its wait fails (it was cancelled, lost its race, or its
// context shut down) before its phase completed: its wait then took nothing, and the phase waits
// for it to arrive again. The arrival that completes a phase claims the races of all the phase's
// waiters together (race_ticket::claim_together): a phase completes only for waiters that all
// still may complete, so no waiter whose phase completed reports a failed wait, and no completed
// phase counted an arrival that reports one.
class barrier_phases : public sync_state {
 public:
  explicit barrier_phases(std::size_t expected) noexcept : left_(expected), expected_(expected) {}

  // What an arrival that ends a phase (or withdraws others) leaves to do with no lock held.
  struct phase_end {
    bool completed = false;           // the phase completed: run the completion, then wake `woken`
    queued_waiter* woken = nullptr;   // the phase's waiters, to succeed
    queued_waiter* losers = nullptr;  // waiters whose race was lost: withdrawn, to fail
  };

  // One arrival; `own` waits for the phase to complete (null: arrive_and_drop(), which waits for
  // nothing), `drop`: the arriving participant leaves for the phases after this one. True if `own`
  // is done: the phase completed with this arrival, or `own` lost its race before it arrived
  // (own->error is then operation_aborted, and it did not arrive). More arrivals in a phase than
  // participants throw std::logic_error and change nothing.
  bool arrive(queued_waiter* own, bool drop, phase_end& end) {
    std::lock_guard lock(mutex_);
    if (left_ == 0) throw std::logic_error("coral::barrier: more arrivals in a phase than participants");
    if (left_ > 1) {
      count_arrival(own, drop);
      return false;
    }
    if (!claim_races(own, end)) {
      if (own && own->error) return true;
      count_arrival(own, drop);  // the losers withdrew: the phase goes on
      return false;
    }
    count_arrival(nullptr, drop);
    end.completed = true;
    waiter_node* woken = nullptr;
    waiter_node** tail = &woken;
    while (queued_waiter* w = waiters_.first()) {
      waiters_.remove(*w);
      // (A waiter whose context is shutting down is not woken: the shutdown takes it out.)
      if (!w->claim_for_wake(nullptr)) {
        phase_over_.push_back(*w);
        continue;
      }
      *tail = w;
      tail = &w->next;
    }
    *tail = nullptr;
    end.woken = static_cast<queued_waiter*>(woken);
    left_ = expected_;
    ++phase_;
    return true;
  }

  // Unlinks `w` if it still waits (true: the caller completes it as cancelled). A waiter of the
  // phase in progress withdraws its arrival; one whose phase completed is only taken out.
  bool cancel(queued_waiter& w) {
    std::lock_guard lock(mutex_);
    if (!w.linked()) return false;
    bool phase_over = false;
    for (queued_waiter* o = phase_over_.first(); o; o = phase_over_.after(*o)) phase_over |= o == &w;
    if (phase_over) {
      phase_over_.remove(w);
    } else {
      waiters_.remove(w);
      ++left_;
    }
    w.error = asio::error::operation_aborted;
    return true;
  }

  // How many phases have completed.
  std::uint64_t phase() const {
    std::lock_guard lock(mutex_);
    return phase_;
  }

  // A select's first pass: an arrival is never attempted without its wait.
  static bool is_set() noexcept { return false; }

  // Wakes what arrive() took out; `complete` (the completion step) runs first, if the phase completed.
  template <class Completion>
  static void finish(phase_end& end, Completion& complete) noexcept {
    wake_all(end.losers, asio::error::operation_aborted, nullptr);
    if (!end.completed) return;
    complete();
    wake_all(end.woken, {}, nullptr);
  }

 private:
  void count_arrival(queued_waiter* own, bool drop) noexcept {
    --left_;
    if (drop) --expected_;
    if (own) waiters_.push_back(*own);
  }

  // Under the lock, by the arrival that would complete the phase: claims the races of the phase's
  // waiters and `own` together (true). Else claims none, unlinks the waiters whose race is lost
  // onto end.losers, each withdrawing its arrival, and sets own->error if `own` lost.
  bool claim_races(queued_waiter* own, phase_end& end) {
    std::vector<race_ticket> tickets;
    std::vector<queued_waiter*> raced;
    for (queued_waiter* w = waiters_.first(); w; w = waiters_.after(*w)) {
      if (w->ticket) tickets.push_back(w->ticket), raced.push_back(w);
    }
    if (own && own->ticket) tickets.push_back(own->ticket), raced.push_back(own);
    if (tickets.empty()) return true;
    std::vector<char> lost;
    if (race_ticket::claim_together(tickets, lost)) return true;
    for (std::size_t i = 0; i < raced.size(); ++i) {
      if (!lost[i]) continue;
      if (raced[i] == own) {
        own->error = asio::error::operation_aborted;
        continue;
      }
      waiters_.remove(*raced[i]);
      ++left_;
      raced[i]->next = end.losers;
      end.losers = raced[i];
    }
    return false;
  }

  // Arrivals the phase in progress still waits for. Invariant: above zero while anyone waits in
  // `waiters_` (the arrival that brings it to zero takes them all out) unless no participant is left.
  std::size_t left_;
  // Participants of the phases to come (arrive_and_drop() lowers it).
  std::size_t expected_;
  std::uint64_t phase_ = 0;
  // Waiters of completed phases whose context was shutting down when their phase completed: the
  // shutdown takes them out. Short, and walked only by cancel().
  waiter_queue<queued_waiter> phase_over_;
};

// A barrier's completion step when it has none.
struct no_completion {
  void operator()() const noexcept {}
};

// A barrier's state: its phases and the completion step that runs once per phase, in the call of
// the arrival that completes it, with no lock held, before any waiter of that phase is woken.
template <class Completion>
class barrier_state : public barrier_phases {
 public:
  barrier_state(std::size_t expected, Completion complete) : barrier_phases(expected), complete_(std::move(complete)) {}

  // co_await arrive_and_wait(): arrives, and waits (false) unless the phase completed (true).
  bool wait(queued_waiter& w) {
    phase_end end;
    const bool done = arrive(&w, false, end);
    finish(end, complete_);
    return done;
  }

  void arrive_and_drop() {
    phase_end end;
    arrive(nullptr, true, end);
    finish(end, complete_);
  }

 private:
  Completion complete_;
};

// The version of a watch's value, whether it is closed, and the receivers waiting for a newer one:
// the state of a watch but for the value (watch_state<T>).
class watch_versions : public sync_state {
 public:
  // co_await receiver.changed(), for a receiver that read version `seen`: completes at once (true)
  // if there is a newer version (even after close()), or with close()'s error if the watch is
  // closed; else queues `w` (false) until send() or close(). True with w.error set to
  // operation_aborted: `w`'s race was already won by another branch.
  bool wait_for_newer(queued_waiter& w, std::uint64_t seen) {
    std::lock_guard lock(mutex_);
    if (version_ == seen && !closed_) {
      waiters_.push_back(w);
      return false;
    }
    if (!w.ticket.claim()) {
      w.error = asio::error::operation_aborted;
    } else if (version_ == seen) {
      w.error = closed_;
    }
    return true;
  }

  // A select's first pass: whether wait_for_newer() would complete at once (`error` as it would).
  bool poll_newer(std::uint64_t seen, boost::system::error_code& error) const {
    std::lock_guard lock(mutex_);
    if (version_ != seen) return true;
    error = closed_;
    return bool(closed_);
  }

  std::uint64_t version() const {
    std::lock_guard lock(mutex_);
    return version_;
  }

  // Every waiting receiver fails with `why` (a watch: errc::channel_closed), and so does every
  // changed() with no newer version from now on; a send() fails. Only the first call does anything.
  void close(boost::system::error_code why) noexcept {
    queued_waiter *waiters = nullptr, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = why;
      std::size_t all = static_cast<std::size_t>(-1);
      waiters = take_winners(all, nullptr, losers);
    }
    wake_all(losers, asio::error::operation_aborted, nullptr);
    wake_all(waiters, why, nullptr);
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return bool(closed_);
  }

 protected:
  // Under the lock, for a new value: the next version, and the waiting receivers to wake.
  queued_waiter* next_version(queued_waiter*& losers) noexcept {
    ++version_;
    std::size_t all = static_cast<std::size_t>(-1);
    return take_winners(all, nullptr, losers);
  }

  // Starts at 0, one more per send(). Invariant: no receiver waits whose version is older (send()
  // wakes them all), but those whose context is shutting down, which the shutdown takes out.
  std::uint64_t version_ = 0;
  boost::system::error_code closed_;  // what close() gave; empty while open
};

// A watch's state: its latest value, shared immutable (a send replaces the pointer under the
// lock; T is copied, moved and destroyed only outside it), and its version.
template <class T>
class watch_state : public watch_versions {
 public:
  explicit watch_state(std::shared_ptr<const T> initial) noexcept : value_(std::move(initial)) {}

  // Replaces the value; wakes every waiting receiver, in order, with no lock held. False, changing
  // nothing, once the watch is closed.
  bool send(std::shared_ptr<const T> value) {
    queued_waiter *waiters = nullptr, *losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return false;
      value_.swap(value);
      waiters = next_version(losers);
    }
    value.reset();  // the value replaced, destroyed here if nobody borrows it
    wake_taken(waiters, losers, nullptr);
    return true;
  }

  // The latest value and its version.
  std::pair<std::shared_ptr<const T>, std::uint64_t> latest() const {
    std::lock_guard lock(mutex_);
    return {value_, version_};
  }

 private:
  std::shared_ptr<const T> value_;  // never null
};

}  // namespace coral::detail
