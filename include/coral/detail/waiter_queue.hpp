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
  // Unlinks up to `n` waiters from the front and returns them as a list linked through `next`;
  // `n` is left with how many more were asked for than there were.
  Waiter* take_front(std::size_t& n) noexcept {
    waiter_node* first = head_;
    waiter_node* last = nullptr;
    for (; n > 0 && head_; --n) {
      last = head_;
      last->linked = false;
      head_ = last->next;
    }
    if (!last) return nullptr;
    last->next = nullptr;
    (head_ ? head_->prev : tail_) = nullptr;
    return static_cast<Waiter*>(first);
  }
  // Unlinks everything; returns the old head (a list linked through `next`).
  Waiter* take_all() noexcept {
    for (auto* w = head_; w; w = w->next) w->linked = false;
    tail_ = nullptr;
    return static_cast<Waiter*>(std::exchange(head_, nullptr));
  }

 private:
  waiter_node* head_ = nullptr;
  waiter_node* tail_ = nullptr;
};

}  // namespace coral::detail
