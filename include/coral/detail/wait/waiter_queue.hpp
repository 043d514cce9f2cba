#pragma once

#include <boost/intrusive/list.hpp>
#include <cstddef>
#include <utility>

namespace coral::detail {

// A node of an intrusive FIFO of suspended operations (channel senders and receivers; mutex,
// semaphore and event waiters). The queue's owner guards it with its own lock. Once taken out,
// waiters travel to their wake in a list of their own, linked through `next`.
struct waiter_node : boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> {
  // Whether it waits in a queue (guarded by the owner's lock).
  bool linked() const noexcept { return is_linked(); }

  waiter_node* next = nullptr;  // (only once unlinked)
};

template <class Waiter>
class waiter_queue {
 public:
  bool empty() const noexcept { return list_.empty(); }
  Waiter& front() noexcept { return static_cast<Waiter&>(list_.front()); }
  // For walking the queue (under the owner's lock, unlinking only what was passed): the first
  // waiter, and the one after `w`, or none.
  Waiter* first() noexcept { return empty() ? nullptr : &front(); }
  Waiter* after(Waiter& w) noexcept {
    auto it = std::next(list_.iterator_to(w));
    return it == list_.end() ? nullptr : static_cast<Waiter*>(&*it);
  }
  void push_back(Waiter& w) noexcept { list_.push_back(w); }
  Waiter& pop_front() noexcept {
    Waiter& w = front();
    remove(w);
    return w;
  }
  void remove(Waiter& w) noexcept { list_.erase(list_.iterator_to(w)); }
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
      Waiter& candidate = *std::exchange(w, after(*w));
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
    *tail = nullptr;
    return static_cast<Waiter*>(taken);
  }
  // As take_front, for every waiter.
  template <class Waker>
  Waiter* take_all(Waker* waker) noexcept {
    std::size_t n = static_cast<std::size_t>(-1);
    return take_front(n, waker);
  }

 private:
  boost::intrusive::list<waiter_node, boost::intrusive::constant_time_size<false>> list_;
};

}  // namespace coral::detail
