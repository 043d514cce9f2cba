#pragma once

// The rest of channel.hpp (which includes this at its end): the state a channel's handles share.

#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/detail/core/loan.hpp"
#include "coral/detail/wait/race.hpp"
#include "coral/detail/wait/task_waiter.hpp"
#include "coral/error.hpp"

namespace coral::detail {

// The box a T whose move may throw travels in (see channel_item). A raced receive lends it, box and
// all, to the receiving task (see loan): `origin_` is then the channel it goes back to if the
// receiving task's move of it throws. (Null while the box is the channel's: a buffered value holds
// no reference to its channel.)
template <class T>
class channel_box final : public loaned_value<T> {
 public:
  explicit channel_box(T&& value) : loaned_value<T>(std::move(value)) {}
  void lend(std::shared_ptr<channel_state<T>> origin) noexcept { origin_ = std::move(origin); }

 private:
  void return_to_owner(std::unique_ptr<loaned_base> self) override;

  std::shared_ptr<channel_state<T>> origin_;
};

// A value on its way through a channel, from its send until its receiver has taken it. Moving an
// item never throws: a T whose move may throw is held in a box of its own, and moving the item
// moves the box. So the last move, out of the channel into the receiver, is the only move of T at
// the hand-over, and when it throws the item can still go back into the channel
// (channel_state::deliver). A raced receive does not even make that move: it lends the box to
// the receiving task, whose own move of the value is then the only one (see loan).
template <class T>
class channel_item {
  static constexpr bool boxed = !std::is_nothrow_move_constructible_v<T>;

 public:
  explicit channel_item(T&& value) : held_(hold(std::move(value))) {}
  explicit channel_item(std::unique_ptr<channel_box<T>> box) noexcept requires boxed : held_(std::move(box)) {}
  channel_item(channel_item&&) noexcept = default;

  T& value() noexcept {
    if constexpr (boxed) {
      return held_->value();
    } else {
      return held_;
    }
  }

  // The box, lent by `origin` to the receiver (the item is empty afterwards).
  std::unique_ptr<loaned_base> lend(std::shared_ptr<channel_state<T>> origin) noexcept requires boxed {
    held_->lend(std::move(origin));
    return std::move(held_);
  }

 private:
  static auto hold(T&& value) {
    if constexpr (boxed) {
      return std::make_unique<channel_box<T>>(std::move(value));
    } else {
      return T(std::move(value));
    }
  }

  std::conditional_t<boxed, std::unique_ptr<channel_box<T>>, T> held_;
};

// A suspended channel operation, linked into the channel's FIFO of senders or receivers. It is
// completed exactly once (see queued_waiter): by a counterpart, by close(), or by cancellation.
struct channel_waiter : queued_waiter {
  bool sending = false;  // in the senders' queue (else the receivers')
  // Set before wake() when moving the value threw: the operation fails with it.
  std::exception_ptr exception;

 protected:
  ~channel_waiter() = default;
};

template <class T>
struct send_waiter : channel_waiter {
  send_waiter() noexcept { sending = true; }
  T* value = nullptr;  // moved from only when the value is handed on
 protected:
  ~send_waiter() = default;
};

template <class T>
struct receive_waiter : channel_waiter {
  std::optional<channel_item<T>>* destination = nullptr;  // where a received value is put
 protected:
  ~receive_waiter() = default;
};

// The shared state of a channel<T>. Every operation runs under `mutex_` only to move one value
// and relink waiters; waking a waiter (resuming a coroutine or posting a handler) always happens
// after the lock is released. T's move constructor and destructor are the only user code that
// runs under the lock. A move that throws leaves everything as it was (the value stays with its
// owner, the waiting counterpart stays queued), except in a hand-off that decided a race: both
// sides then fail with the exception. A received value stays the channel's until the receiver
// has taken it (deliver): if that last move throws, it goes back, first in line.
//
// Lossless select: a waiting operation with a race ticket (a branch of a when_any) is handed a
// value, or has its value taken, only if the hand-off claims its race; one whose race was won by
// another branch is unlinked and fails with operation_aborted, and the value goes to the next
// waiter or the buffer. An operation that fails with operation_aborted did not happen.
template <class T>
class channel_state {
 public:
  channel_state(std::size_t capacity, overflow policy) : capacity_(capacity), policy_(policy) {
    if (capacity == 0 && policy != overflow::wait) {
      throw std::invalid_argument(
          "coral::channel: a rendezvous channel (capacity 0) has no buffer to drop from; use a capacity of 1 or more "
          "(coral::conflated is capacity 1 with overflow::drop_oldest)");
    }
  }

  // Returns true if the send completed at once (w.error says how); false if `w` now waits, or,
  // with `may_wait` false, if it would have to (`w` is not queued then). Throws what T's move
  // throws. A closed channel takes no value, even with room in its buffer.
  bool send(send_waiter<T>& w, task_segment* waker, bool may_wait = true) {
    return complete_or_wait(w, waker, may_wait,
                            [&](wakeups& h) { return closed_ ? outcome::none : put(*w.value, w.ticket, h); });
  }

  // Sends only if that needs no waiting. Consumes `value` only on success.
  bool try_send(T& value, task_segment* waker) {
    wakeups h(waker);
    bool sent = false;
    {
      std::lock_guard lock(mutex_);
      if (!closed_) sent = put(value, race_ticket(), h) == outcome::done;
    }
    h.complete(waker);
    return sent;
  }

  // Returns true if the receive completed at once (an item in *w.destination, or w.error); false
  // if `w` now waits, or, with `may_wait` false, if it would have to. Throws what T's move throws.
  // Values buffered before a close are still received.
  bool receive(receive_waiter<T>& w, task_segment* waker, bool may_wait = true) {
    return complete_or_wait(w, waker, may_wait, [&](wakeups& h) { return take(*w.destination, w.ticket, h); });
  }

  std::optional<T> try_receive(task_segment* waker) {
    std::optional<channel_item<T>> item;
    wakeups h(waker);
    {
      std::lock_guard lock(mutex_);
      take(item, race_ticket(), h);
    }
    h.complete(waker);
    if (!item) return std::nullopt;
    return deliver(*item, [](T&& value) { return std::optional<T>(std::in_place, std::move(value)); });
  }

  // Makes a received value the receiver's: `to_receiver(T&&)` moves it to where the receiver wants
  // it, the one move of T after the value left the buffer or its sender. If that move throws (and,
  // as a move that throws should, leaves its source as it was), the value goes back into the
  // channel, first in line: to the first waiting receiver, else to the front of the buffer, past
  // its capacity if need be (even if the channel has been closed since: it is still receivable).
  // The receive did not happen; the exception propagates.
  template <class Receiver>
  decltype(auto) deliver(channel_item<T>& item, Receiver to_receiver) {
    try {
      return to_receiver(std::move(item.value()));
    } catch (...) {
      give_back(std::move(item));
      throw;
    }
  }

  // See deliver (and a receive whose completion could not be posted, channel_async_op).
  void give_back(channel_item<T>&& item) {
    wakeups h(nullptr);
    {
      std::lock_guard lock(mutex_);
      bool unused = false;
      if (auto* receiver = claim_counterpart(receivers_, race_ticket(), h, unused)) {
        auto& r = static_cast<receive_waiter<T>&>(*receiver);
        r.destination->emplace(std::move(item));
        receivers_.remove(r);
        h.counterpart = &r;
      } else {
        try {
          buffer_.push_front(std::move(item));
        } catch (...) {  // (no memory for it: the losers found on the way still need waking)
          h.failure = std::current_exception();
        }
      }
    }
    h.complete(nullptr);
  }

  // Unlinks `w` if it still waits; true if it did (the caller then completes it as cancelled).
  bool cancel(channel_waiter& w) {
    std::lock_guard lock(mutex_);
    if (!w.linked()) return false;
    (w.sending ? senders_ : receivers_).remove(w);
    w.error = asio::error::operation_aborted;
    return true;
  }

  // `cause`: what receivers get once the buffer is drained, instead of channel_closed (the first
  // close decides it).
  // A waiting branch of a race (a select's) fails with channel_closed only if that decides its
  // race, as a hand-off would: the select ends with that failure, and no other branch of it can
  // happen after the close. One whose race another branch has won fails with operation_aborted.
  void close(std::exception_ptr cause = nullptr) {
    channel_waiter* senders;
    channel_waiter* receivers;
    channel_waiter* losers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!closed_) cause_ = std::move(cause);
      closed_ = true;
      senders = claim_races(senders_.take_all(static_cast<task_segment*>(nullptr)), losers);
      receivers = claim_races(receivers_.take_all(static_cast<task_segment*>(nullptr)), losers);
      for (auto* r = receivers; r; r = static_cast<channel_waiter*>(r->next)) r->exception = cause_;
    }
    wake_all(losers, asio::error::operation_aborted, nullptr);
    wake_all(senders, errc::channel_closed, nullptr);
    wake_all(receivers, errc::channel_closed, nullptr);
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return buffer_.size();
  }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  // What an operation did under the lock besides its own part, finished once the lock is
  // released: the counterpart to wake (it was handed a value, or its value was taken), the
  // waiters that lost their race, and the exception a move threw.
  struct wakeups {
    explicit wakeups(task_segment* w) noexcept : waker(w) {}
    task_segment* waker;  // the operation's task, if any (see claim_for_wake)
    channel_waiter* counterpart = nullptr;
    channel_waiter* losers = nullptr;  // linked through `next`
    std::exception_ptr failure;

    void lose(channel_waiter& w) noexcept {
      w.next = losers;
      losers = &w;
    }
    void complete(task_segment* waker) {
      wake_all(losers, asio::error::operation_aborted, nullptr);
      if (counterpart) counterpart->wake(waker);
      if (failure) std::rethrow_exception(failure);
    }
  };

  // done: the value moved. lost: the operation's race was won by another branch (nothing done).
  // none: nothing to move (no counterpart, no room or no value). failed: a move threw.
  enum class outcome { done, lost, none, failed };

  // A send or receive `w`: `attempt(h)`, under the lock, moves its value if it can (put or take);
  // if nothing can move yet, `w` waits in its queue, or fails once the channel is closed (a receiver
  // with the close's cause, as close() fails the waiting ones). Counterparts and losers are woken
  // after the lock. Returns true if `w` completed.
  template <class Waiter, class Attempt>
  bool complete_or_wait(Waiter& w, task_segment* waker, bool may_wait, Attempt attempt) {
    constexpr bool sends = std::is_same_v<Waiter, send_waiter<T>>;
    wakeups h(waker);
    bool waits = false;
    {
      std::lock_guard lock(mutex_);
      switch (attempt(h)) {
        case outcome::lost:
          w.error = asio::error::operation_aborted;
          break;
        case outcome::none:
          if (closed_) {
            w.error = errc::channel_closed;
            if constexpr (!sends) w.exception = cause_;
          } else {
            if (may_wait) (sends ? senders_ : receivers_).push_back(w);
            waits = true;
          }
          break;
        default:
          break;
      }
    }
    h.complete(waker);
    return !waits;
  }

  // Under the lock: claims the race of each waiter of `list` (taken out of a queue, linked through
  // `next`) that takes part in one; those whose race was won by another branch go to `losers`.
  // Returns the others, in order.
  static channel_waiter* claim_races(channel_waiter* list, channel_waiter*& losers) noexcept {
    channel_waiter* kept = nullptr;
    channel_waiter* last = nullptr;
    while (list) {
      channel_waiter* w = std::exchange(list, static_cast<channel_waiter*>(list->next));
      w->next = nullptr;
      if (!w->ticket.claim()) {
        w->next = losers;
        losers = w;
      } else if (last) {
        last->next = w;
        last = w;
      } else {
        kept = last = w;
      }
    }
    return kept;
  }

  // Under the lock: claims, with the operation's ticket `mine`, the first waiting counterpart in
  // `queue` whose race it can win too, unlinking the ones that lost theirs. Null if none.
  channel_waiter* claim_counterpart(waiter_queue<channel_waiter>& queue, const race_ticket& mine, wakeups& h,
                                    bool& mine_lost) {
    for (channel_waiter* w = queue.first(); w;) {
      channel_waiter& candidate = *std::exchange(w, queue.after(*w));
      // (A waiter whose context is shutting down stays for the shutdown to take out.)
      if (!candidate.claim_for_wake(h.waker)) continue;
      switch (mine.claim_with(candidate.ticket)) {
        case race_ticket::pairing::both:
          return &candidate;
        case race_ticket::pairing::mine_lost:
          candidate.unclaim();
          mine_lost = true;
          return nullptr;
        case race_ticket::pairing::theirs_lost:
          queue.remove(candidate);
          h.lose(candidate);
          break;
        case race_ticket::pairing::same_race:
          candidate.unclaim();
          break;  // another branch of the operation's own race: it may still win
      }
    }
    return nullptr;
  }

  // Under the lock: completes `counterpart` after a hand-off that threw. Without a race it stays
  // queued (nothing changed); a hand-off that decided a race fails on both sides.
  outcome move_failed(waiter_queue<channel_waiter>& queue, channel_waiter& counterpart, const race_ticket& mine,
                      wakeups& h) noexcept {
    h.failure = std::current_exception();
    if (mine || counterpart.ticket) {
      counterpart.exception = h.failure;
      queue.remove(counterpart);
      h.counterpart = &counterpart;
    } else {
      counterpart.unclaim();
    }
    return outcome::failed;
  }

  // Under the lock: hands `value` to the first waiting receiver (woken by h.complete) or to the
  // buffer; `value` is untouched unless the outcome is done.
  outcome put(T& value, const race_ticket& mine, wakeups& h) {
    bool mine_lost = false;
    if (auto* receiver = claim_counterpart(receivers_, mine, h, mine_lost)) {
      auto& r = static_cast<receive_waiter<T>&>(*receiver);
      try {
        r.destination->emplace(std::move(value));
      } catch (...) {
        return move_failed(receivers_, r, mine, h);
      }
      receivers_.remove(r);
      h.counterpart = &r;
      return outcome::done;
    }
    if (mine_lost) return outcome::lost;
    const bool full = buffer_.size() >= capacity_;
    if (full && policy_ == overflow::wait) return outcome::none;
    if (!mine.claim()) return outcome::lost;
    try {
      if (full && policy_ == overflow::drop_latest) {
        [[maybe_unused]] T dropped(std::move(value));  // a send that succeeded has always taken its value
        return outcome::done;
      }
      buffer_.emplace_back(std::move(value));
    } catch (...) {
      h.failure = std::current_exception();
      return outcome::failed;
    }
    if (full) buffer_.pop_front();  // drop_oldest
    return outcome::done;
  }

  // Under the lock: moves the next value into `out`, refilling the buffer from the first waiting
  // sender that may happen (woken by h.complete). If the refill throws, the receive has still
  // happened and that sender fails with the exception.
  outcome take(std::optional<channel_item<T>>& out, const race_ticket& mine, wakeups& h) {
    if (!buffer_.empty()) {
      if (!mine.claim()) return outcome::lost;
      out.emplace(std::move(buffer_.front()));
      buffer_.pop_front();
      // (A value given back may have left the buffer full.)
      if (buffer_.size() < capacity_) refill(h);
      return outcome::done;
    }
    bool mine_lost = false;
    if (auto* sender = claim_counterpart(senders_, mine, h, mine_lost)) {
      auto& s = static_cast<send_waiter<T>&>(*sender);
      try {
        out.emplace(std::move(*s.value));
      } catch (...) {
        return move_failed(senders_, s, mine, h);
      }
      senders_.remove(s);
      h.counterpart = &s;
      return outcome::done;
    }
    return mine_lost ? outcome::lost : outcome::none;
  }

  void refill(wakeups& h) noexcept {
    bool unused = false;
    auto* sender = claim_counterpart(senders_, race_ticket(), h, unused);
    if (!sender) return;
    auto& s = static_cast<send_waiter<T>&>(*sender);
    try {
      buffer_.emplace_back(std::move(*s.value));
    } catch (...) {
      s.exception = std::current_exception();
    }
    senders_.remove(s);
    h.counterpart = &s;
  }

  const std::size_t capacity_;
  const overflow policy_;
  mutable std::mutex mutex_;
  // At most capacity_ values, but for a value given back (deliver) to a full buffer.
  std::deque<channel_item<T>> buffer_;
  waiter_queue<channel_waiter> senders_;
  waiter_queue<channel_waiter> receivers_;
  bool closed_ = false;
  std::exception_ptr cause_;
};

template <class T>
void channel_box<T>::return_to_owner(std::unique_ptr<loaned_base> self) {
  auto origin = std::move(origin_);
  origin->give_back(channel_item<T>(std::unique_ptr<channel_box>(static_cast<channel_box*>(self.release()))));
}

// Cancels a waiting channel operation (see wait_cancellation).
template <class T>
using channel_cancellation = wait_cancellation<channel_state<T>, channel_waiter>;

}  // namespace coral::detail
