#pragma once

#include <cstddef>
#include <utility>

namespace coral::detail {

// A node of an intrusive FIFO of suspended operations (channel senders and receivers; mutex,
// semaphore and event waiters). The queue's owner guards it with its own lock.
struct waiter_node {
  waiter_node* next = nullptr;
  waiter_node* prev = nullptr;
  bool linked = false;  // guarded by the owner's lock
};

template <class Waiter>
class waiter_queue {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  Waiter& front() const noexcept { return static_cast<Waiter&>(*head_); }
  // For walking the queue through `next` (under the owner's lock, unlinking only what was passed).
  Waiter* first() const noexcept { return static_cast<Waiter*>(head_); }
  void push_back(Waiter& w) noexcept {
    w.prev = tail_;
    w.next = nullptr;
    (tail_ ? tail_->next : head_) = &w;
    tail_ = &w;
    w.linked = true;
  }
  Waiter& pop_front() noexcept {
    Waiter& w = front();
    remove(w);
    return w;
  }
  void remove(Waiter& w) noexcept {
    (w.prev ? w.prev->next : head_) = w.next;
    (w.next ? w.next->prev : tail_) = w.prev;
    w.next = w.prev = nullptr;
    w.linked = false;
  }
  // Unlinks up to `n` waiters from the front that `waker` may wake (see claim_for_wake) and returns
  // them as a list linked through `next`; `n` is left with how many more were asked for than
  // there were. Waiters it may not wake stay queued.
  template <class Waker>
  Waiter* take_front(std::size_t& n, Waker* waker) noexcept {
    Waiter* none = nullptr;
    return take_front(n, waker, none, [](Waiter&) noexcept { return true; });
  }
  // As take_front, for waiters that may have lost a race: one for which `wins` is false is
  // unlinked onto `losers` (linked through `next`) instead, and does not count.
  template <class Waker, class Wins>
  Waiter* take_front(std::size_t& n, Waker* waker, Waiter*& losers, Wins wins) noexcept {
    return take_front_while(
        waker, losers, [&](Waiter&) noexcept { return n > 0; },
        [&](Waiter& w) noexcept {
          if (!wins(w)) return false;
          --n;
          return true;
        });
  }
  // The general form: walks the queue from the front while `fits(next)` holds (a waiter that does
  // not fit stops the walk: those behind it wait their turn), unlinking each that `waker` may wake;
  // `takes(w)` then says whether it is taken (and accounts for it) or lost its race (`losers`).
  template <class Waker, class Fits, class Takes>
  Waiter* take_front_while(Waker* waker, Waiter*& losers, Fits fits, Takes takes) noexcept {
    waiter_node* taken = nullptr;
    waiter_node** tail = &taken;
    for (Waiter* w = first(); w && fits(*w);) {
      Waiter& candidate = *std::exchange(w, static_cast<Waiter*>(w->next));
      if (!candidate.claim_for_wake(waker)) continue;
      remove(candidate);
      if (!takes(candidate)) {
        candidate.next = losers;
        losers = &candidate;
        continue;
      }
      *tail = &candidate;
      tail = &candidate.next;
    }
    return static_cast<Waiter*>(taken);
  }
  // As take_front, for every waiter.
  template <class Waker>
  Waiter* take_all(Waker* waker) noexcept {
    std::size_t n = static_cast<std::size_t>(-1);
    return take_front(n, waker);
  }

 private:
  waiter_node* head_ = nullptr;
  waiter_node* tail_ = nullptr;
};

}  // namespace coral::detail
