#pragma once

#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>

#include "coral/detail/error_codes.hpp"
#include "coral/detail/task_waiter.hpp"

namespace coral::detail {

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
  std::optional<T>* destination = nullptr;  // where a received value is put
 protected:
  ~receive_waiter() = default;
};

// The shared state of a channel<T>. Every operation runs under `mutex_` only to move one value
// and relink waiters; waking a waiter (resuming a coroutine or posting a handler) always happens
// after the lock is released. T's move constructor and destructor are the only user code that
// runs under the lock, and a move that throws leaves everything as it was: the value stays with
// its owner and the waiting counterpart stays queued (strong guarantee).
template <class T>
class channel_state {
 public:
  explicit channel_state(std::size_t capacity) : capacity_(capacity) {}

  // Returns true if the send completed at once (w.error says how); false if `w` now waits.
  // Throws what T's move throws, with nothing changed.
  bool send(send_waiter<T>& w, task_context* waker) {
    channel_waiter* receiver = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        w.error = errc::channel_closed;
        return true;
      }
      if (!put(*w.value, receiver)) {
        senders_.push_back(w);
        return false;
      }
    }
    if (receiver) receiver->wake(waker);
    return true;
  }

  // Sends only if that needs no waiting. Consumes `value` only on success.
  bool try_send(T& value, task_context* waker) {
    channel_waiter* receiver = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closed_ || !put(value, receiver)) return false;
    }
    if (receiver) receiver->wake(waker);
    return true;
  }

  // Returns true if the receive completed at once (a value in *w.destination, or w.error); false
  // if `w` now waits. Throws what T's move throws, with nothing consumed.
  bool receive(receive_waiter<T>& w, task_context* waker) {
    taken t;
    {
      std::lock_guard lock(mutex_);
      if (!take(*w.destination, t)) {
        if (closed_) {
          w.error = errc::channel_closed;
          return true;
        }
        receivers_.push_back(w);
        return false;
      }
    }
    t.wake(waker);
    return true;
  }

  std::optional<T> try_receive(task_context* waker) {
    std::optional<T> value;
    taken t;
    {
      std::lock_guard lock(mutex_);
      take(value, t);
    }
    t.wake(waker);
    return value;
  }

  // Unlinks `w` if it still waits; true if it did (the caller then completes it as cancelled).
  bool cancel(channel_waiter& w) {
    std::lock_guard lock(mutex_);
    if (!w.linked) return false;
    (w.sending ? senders_ : receivers_).remove(w);
    w.error = asio::error::operation_aborted;
    return true;
  }

  void close() {
    channel_waiter* senders;
    channel_waiter* receivers;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      senders = senders_.take_all();
      receivers = receivers_.take_all();
    }
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
  // What a take() did besides producing the value: a sender to wake (its value was taken), or
  // one to fail (moving its value into the buffer threw).
  struct taken {
    channel_waiter* sender = nullptr;
    void wake(task_context* waker) {
      if (sender) sender->wake(waker);
    }
  };

  // Under the lock: hands `value` to the first waiting receiver (returned in `receiver`, to be
  // woken) or to the buffer. False, with `value` untouched, if neither can take it. The receiver
  // is unlinked only once its value is in place.
  bool put(T& value, channel_waiter*& receiver) {
    if (!receivers_.empty()) {
      auto& r = static_cast<receive_waiter<T>&>(receivers_.front());
      r.destination->emplace(std::move(value));
      receivers_.remove(r);
      receiver = &r;
      return true;
    }
    if (buffer_.size() < capacity_) {
      buffer_.push_back(std::move(value));
      return true;
    }
    return false;
  }

  // Under the lock: moves the next value into `out`, refilling the buffer from the first waiting
  // sender (in `t.sender`, to be woken). False if there is no value. If the refill throws, the
  // receive has still happened and that sender fails with the exception.
  bool take(std::optional<T>& out, taken& t) {
    if (!buffer_.empty()) {
      out.emplace(std::move(buffer_.front()));
      buffer_.pop_front();
      if (!senders_.empty()) {
        auto& s = static_cast<send_waiter<T>&>(senders_.front());
        try {
          buffer_.push_back(std::move(*s.value));
        } catch (...) {
          s.exception = std::current_exception();
        }
        senders_.remove(s);
        t.sender = &s;
      }
      return true;
    }
    if (!senders_.empty()) {
      auto& s = static_cast<send_waiter<T>&>(senders_.front());
      out.emplace(std::move(*s.value));
      senders_.remove(s);
      t.sender = &s;
      return true;
    }
    return false;
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<T> buffer_;  // at most capacity_ values
  waiter_queue<channel_waiter> senders_;
  waiter_queue<channel_waiter> receivers_;
  bool closed_ = false;
};

}  // namespace coral::detail
