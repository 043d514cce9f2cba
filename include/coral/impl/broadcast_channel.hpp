#pragma once

// The rest of broadcast_channel.hpp (which includes this at its end): the state a broadcast_channel
// and its subscribers share, and what a task awaits for each of their operations.

#include <algorithm>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/config.hpp"
#include "coral/detail/core/loan.hpp"
#include "coral/detail/core/ref_counted.hpp"
#include "coral/detail/core/task_result.hpp"
#include "coral/detail/tracking/task_record.hpp"
#include "coral/detail/wait/task_waiter.hpp"
#include "coral/error.hpp"

namespace coral::detail {

// A suspended operation of a broadcast channel, linked into its senders' or receivers' queue.
// Completed once (see queued_waiter): by a send or a receive that makes room, by close(), by
// cancellation or, for a receive, by its subscriber going.
struct broadcast_waiter : queued_waiter {
  bool sending = false;  // in the senders' queue (else the receivers')
  // Set before wake() when copying or moving T threw: the operation fails with it.
  std::exception_ptr exception;

 protected:
  ~broadcast_waiter() = default;
};

// One value sent on a broadcast channel, made by its send before the channel's lock is taken, and
// shared by the buffer and the receives that copy it: the last reference destroys it, never under
// the lock (see broadcast_state::wakeups).
template <class T>
class broadcast_value : public ref_counted<broadcast_value<T>> {
 public:
  template <class U>
  explicit broadcast_value(U&& v) : value(std::forward<U>(v)) {}
  T value;
  // (While it waits in a wakeups' list of values to let go of once the lock is released.)
  counted_ref<broadcast_value> next_released;

  // Whether a receive or the buffer holds it besides the caller (else the caller may move it: no
  // new reference can be taken then).
  bool shared() const noexcept { return ref_counted<broadcast_value>::shared(); }

 private:
  friend class ref_counted<broadcast_value>;
  void destroy_self() noexcept { delete this; }
};

template <class T>
using broadcast_value_ref = counted_ref<broadcast_value<T>>;

template <class T>
struct broadcast_cursor;
template <class T>
class broadcast_state;

// A value a subscriber received, lent by a raced receive to the receiving task (see loan): the
// task copies it when it takes it (moves it, if nobody else holds it any more), and if that
// throws, it goes back to the subscriber, for its next receive.
template <class T>
class broadcast_box final : public loaned<T> {
 public:
  broadcast_box(std::shared_ptr<broadcast_state<T>> state, std::shared_ptr<broadcast_cursor<T>> cursor,
                broadcast_value_ref<T> received) noexcept
      : loaned<T>(&received->value),
        state_(std::move(state)),
        cursor_(std::move(cursor)),
        received_(std::move(received)) {}
  bool shared() const noexcept override { return received_->shared(); }

 private:
  // (`self` is this box: it goes on return.)
  void return_to_owner([[maybe_unused]] std::unique_ptr<loaned_base> self) override {
    state_->give_back(*cursor_, std::move(received_));
  }

  std::shared_ptr<broadcast_state<T>> state_;
  std::shared_ptr<broadcast_cursor<T>> cursor_;
  broadcast_value_ref<T> received_;
};

// A subscriber's place in the stream of values. Shared by the subscriber and its receives, so
// that neither outlives the other's view of it.
template <class T>
struct broadcast_cursor {
  // Guarded by the state's lock. The number of the next value this subscriber receives (values are
  // numbered from 0 in the order sent).
  std::uint64_t position = 0;
  // The subscriber's receive waiting in the queue, if any (one at a time).
  broadcast_waiter* receiving = nullptr;
  // False once the subscriber went: its receives fail with channel_closed.
  bool subscribed = true;
  // A value received whose copy for the task failed: the next receive gets it again.
  broadcast_value_ref<T> retry;
};

template <class T>
struct broadcast_send_waiter : broadcast_waiter {
  broadcast_send_waiter() noexcept { sending = true; }
  broadcast_value_ref<T> value;  // handed to the buffer when the value is published

 protected:
  ~broadcast_send_waiter() = default;
};

template <class T>
struct broadcast_receive_waiter : broadcast_waiter {
  std::shared_ptr<broadcast_cursor<T>> cursor;
  broadcast_value_ref<T> received;  // the value received, copied for the task once it resumes
  std::uint64_t missed = 0;         // with error errc::lagged: how many values it lost

 protected:
  ~broadcast_receive_waiter() = default;
};

// The shared state of a broadcast_channel<T>: a buffer of at most `capacity` values, each stored
// once with the count of subscribers that have yet to receive it, and the queues of waiting senders
// and receivers. A value leaves the buffer once every subscriber has received it (or, with
// drop_oldest, when a send needs its room).
//
// Each operation holds the lock only to move references to values and relink waiters: no code of
// T runs under it. A send makes its value (broadcast_value) before it takes the lock; a receive
// takes a reference, and the subscriber's copy is made once the lock is released (moved instead
// when nobody else holds the value); a value the channel lets go of is destroyed after the lock
// is released, as waiters are woken then.
//
// Invariants (under the lock): values numbered [first_, next_) are buffered; a subscriber at
// position p still needs every buffered value numbered p or later, and each buffered value's
// `pending` counts the subscribers at or before it (so `pending` never decreases along the buffer,
// and a value is at the front when its count reaches zero). A subscriber behind first_ lagged: the
// values it missed were dropped. A waiting receive's subscriber is at next_ (a send hands it its
// value at once). A sender waits only while the buffer is full.
//
// Race tickets (when_any, with_timeout): a waiting operation is handed a value, or has its value
// published, only if that claims its race; one whose race another branch won is unlinked and fails
// with operation_aborted, and nothing happened: a receive that lost did not move its subscriber.
template <class T>
class broadcast_state {
 public:
  broadcast_state(std::size_t capacity, bool drops_oldest) : capacity_(capacity), drops_oldest_(drops_oldest) {
    if (capacity == 0) {
      throw std::invalid_argument(
          "coral::broadcast_channel: capacity 0 leaves no room for a value until every subscriber has it; use 1 or "
          "more");
    }
  }

  // A subscriber from the next value sent on.
  std::shared_ptr<broadcast_cursor<T>> subscribe() {
    auto cursor = std::make_shared<broadcast_cursor<T>>();
    std::lock_guard lock(mutex_);
    cursor->position = next_;
    ++subscribers_;
    return cursor;
  }

  // A place that is not subscribed (a moved-from subscriber's): its receives fail with
  // channel_closed.
  static std::shared_ptr<broadcast_cursor<T>> unsubscribed_cursor() {
    auto gone = std::make_shared<broadcast_cursor<T>>();
    gone->subscribed = false;
    return gone;
  }

  // The subscriber went: it holds back no sender any more, and its waiting receive (if any) fails
  // with channel_closed.
  void unsubscribe(broadcast_cursor<T>& cursor) noexcept {
    wakeups w(nullptr);
    {
      std::lock_guard lock(mutex_);
      if (!cursor.subscribed) return;
      cursor.subscribed = false;
      --subscribers_;
      w.drop_later(std::move(cursor.retry));
      if (auto* r = cursor.receiving; r && r->claim_for_wake(nullptr)) {
        receivers_.remove(*r);
        cursor.receiving = nullptr;
        r->error = errc::channel_closed;
        w.add(*r);
      }  // (else its context is shutting down, and the shutdown cancels it)
      for (std::uint64_t n = std::max(cursor.position, first_); n < next_; ++n) --buffer_[n - first_].pending;
      make_room(w);
    }
    w.complete();
  }

  // Returns true if the send completed at once (w.error says how); false if `w` now waits, or,
  // with `may_wait` false, if it would have to (`w` is not queued then).
  bool send(broadcast_send_waiter<T>& w, task_segment* waker, bool may_wait = true) {
    wakeups wake(waker);
    bool waits = false;
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        w.error = errc::channel_closed;
      } else if (full()) {
        if (may_wait) senders_.push_back(w);
        waits = true;
      } else if (!w.ticket.claim()) {
        w.error = asio::error::operation_aborted;
      } else {
        publish(std::move(w.value), wake);
        make_room(wake);
      }
    }
    wake.complete();
    return !waits;
  }

  // Sends only if that needs no waiting (false if the buffer is full, or the channel closed).
  // Consumes `value` only on success. (Its broadcast_value is made before the lock is taken: with
  // the value moved in, and moved back in the rare case that the room is gone by then, where T's
  // move assignment cannot throw; else with a copy.)
  bool try_send(T& value) {
    {
      std::lock_guard lock(mutex_);
      if (closed_ || full()) return false;
    }
    constexpr bool may_move_back = std::is_nothrow_move_assignable_v<T>;
    auto made = adopt(may_move_back ? new broadcast_value<T>(std::move(value)) : new broadcast_value<T>(value));
    wakeups wake(nullptr);
    {
      std::lock_guard lock(mutex_);
      if (!closed_ && !full()) {
        publish(std::move(made), wake);
        make_room(wake);
      }
    }
    wake.complete();
    if (!made) return true;
    if constexpr (may_move_back) value = std::move(made->value);
    return false;
  }

  // Returns true if the receive completed at once (a value in w.received, or w.error); false if
  // `w` now waits, or, with `may_wait` false, if it would have to.
  bool receive(broadcast_receive_waiter<T>& w, task_segment* waker, bool may_wait = true) {
    wakeups wake(waker);
    bool waits = false;
    {
      std::lock_guard lock(mutex_);
      broadcast_cursor<T>& cursor = *w.cursor;
      if (cursor.receiving) throw std::logic_error("coral::broadcast_channel: two receives at once on one subscriber");
      if (!cursor.subscribed) {
        w.error = errc::channel_closed;
      } else if (cursor.retry || cursor.position < next_) {
        if (!w.ticket.claim()) {
          w.error = asio::error::operation_aborted;
        } else {
          take(cursor, w.received, w);
          make_room(wake);
        }
      } else if (closed_) {
        w.error = errc::channel_closed;
      } else {
        if (may_wait) {
          receivers_.push_back(w);
          cursor.receiving = &w;
        }
        waits = true;
      }
    }
    wake.complete();
    return !waits;
  }

  // Receives without waiting: nullopt if no value is ready for the subscriber (or it went, or the
  // channel is closed and it has received everything). Throws lagged as a receive would.
  std::optional<T> try_receive(broadcast_cursor<T>& cursor) {
    broadcast_value_ref<T> received;
    std::uint64_t missed = 0;
    wakeups wake(nullptr);
    {
      std::lock_guard lock(mutex_);
      if (cursor.receiving) throw std::logic_error("coral::broadcast_channel: two receives at once on one subscriber");
      if (!cursor.subscribed || (!cursor.retry && cursor.position == next_)) return std::nullopt;
      struct {
        boost::system::error_code error;
        std::uint64_t missed = 0;
      } outcome;
      take(cursor, received, outcome);
      missed = outcome.missed;
      make_room(wake);
    }
    wake.complete();
    if (missed != 0) throw lagged(missed);
    return copy_for(cursor, std::move(received),
                    [](auto&& v) { return std::optional<T>(std::forward<decltype(v)>(v)); });
  }

  // The subscriber's own T of a value it received (outside the lock), made straight into what
  // make(T) builds (the task's value, an optional). If that throws, the value goes back to the
  // subscriber, for its next receive, and the exception is rethrown: the receive took nothing.
  template <class Make>
  auto copy_for(broadcast_cursor<T>& cursor, broadcast_value_ref<T> received, Make make) {
    try {
      if (received->shared()) return make(static_cast<const T&>(received->value));
      return make(std::move(received->value));
    } catch (...) {
      give_back(cursor, std::move(received));
      throw;
    }
  }

  // A value received that no task took (its copy failed, or the receiving task's context shut
  // down before it resumed): the subscriber's next receive gets it.
  void give_back(broadcast_cursor<T>& cursor, broadcast_value_ref<T> received) noexcept {
    std::lock_guard lock(mutex_);
    if (cursor.subscribed && !cursor.retry) cursor.retry = std::move(received);
  }

  // Unlinks `w` if it still waits; true if it did (the caller then completes it as cancelled).
  bool cancel(broadcast_waiter& w) {
    std::lock_guard lock(mutex_);
    if (!w.linked()) return false;
    if (w.sending) {
      senders_.remove(w);
    } else {
      receivers_.remove(w);
      static_cast<broadcast_receive_waiter<T>&>(w).cursor->receiving = nullptr;
    }
    w.error = asio::error::operation_aborted;
    return true;
  }

  // Waiting and later senders fail with channel_closed; subscribers receive what is buffered for
  // them, then fail with channel_closed.
  void close() noexcept {
    broadcast_waiter *senders, *receivers;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      senders = senders_.take_all(static_cast<task_segment*>(nullptr));
      receivers = receivers_.take_all(static_cast<task_segment*>(nullptr));
      for (auto* r = receivers; r; r = static_cast<broadcast_waiter*>(r->next))
        static_cast<broadcast_receive_waiter<T>*>(r)->cursor->receiving = nullptr;
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
  std::size_t subscriber_count() const {
    std::lock_guard lock(mutex_);
    return subscribers_;
  }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  struct slot {
    slot(broadcast_value_ref<T>&& v, std::size_t p) noexcept : value(std::move(v)), pending(p) {}
    broadcast_value_ref<T> value;  // (null once the last subscriber to receive it took it)
    std::size_t pending;           // subscribers that have yet to receive it
  };

  // The waiters an operation completed under the lock (each with its outcome set), woken in order
  // once the lock is released, and the values the operation let go of, released then (their
  // destructors are T's).
  struct wakeups {
    explicit wakeups(task_segment* w) noexcept : waker(w) {}
    wakeups(const wakeups&) = delete;
    wakeups& operator=(const wakeups&) = delete;
    // (Outside the lock: declared before the lock_guard of each operation.)
    ~wakeups() {
      while (released) released = std::move(released->next_released);
    }
    task_segment* waker;  // the operation's task, if any (see claim_for_wake)
    broadcast_waiter* head = nullptr;
    broadcast_waiter* tail = nullptr;
    broadcast_value_ref<T> released;

    void drop_later(broadcast_value_ref<T> value) noexcept {
      if (!value) return;
      value->next_released = std::move(released);
      released = std::move(value);
    }

    void add(broadcast_waiter& w) noexcept {
      w.next = nullptr;
      if (tail) {
        tail->next = &w;
      } else {
        head = &w;
      }
      tail = &w;
    }
    void complete() noexcept { wake_each(head, waker); }
  };

  bool full() const noexcept { return !drops_oldest_ && buffer_.size() >= capacity_; }

  // Under the lock: the subscriber at `cursor` receives its next value into `out` (a reference to
  // it: the buffer's own for the last subscriber to receive it), or, if values it had not
  // received were dropped, the count of them in outcome.missed (with error errc::lagged), and it
  // moves on to the oldest value still buffered. A value whose copy failed comes first.
  template <class Outcome>
  void take(broadcast_cursor<T>& cursor, broadcast_value_ref<T>& out, Outcome& outcome) noexcept {
    if (cursor.retry) {
      out = std::move(cursor.retry);
      return;
    }
    if (cursor.position < first_) {
      outcome.missed = first_ - cursor.position;
      outcome.error = errc::lagged;
      cursor.position = first_;
      return;
    }
    slot& s = buffer_[cursor.position - first_];
    if (s.pending == 1) {
      out = std::move(s.value);
    } else {
      out = broadcast_value_ref<T>(s.value.get());
    }
    --s.pending;
    ++cursor.position;
  }

  // Under the lock: buffers `value` for every subscriber (dropping the oldest value if the buffer
  // is full, under drop_oldest) and hands it to the waiting receivers; make_room() follows.
  // Throws only if the buffer cannot grow (std::bad_alloc), with nothing changed.
  void publish(broadcast_value_ref<T>&& value, wakeups& wake) {
    buffer_.emplace_back(std::move(value), subscribers_);
    if (buffer_.size() > capacity_) {  // drop_oldest: those who had not received it lag
      wake.drop_later(std::move(buffer_.front().value));
      buffer_.pop_front();
      ++first_;
    }
    ++next_;
    for (broadcast_waiter* w = receivers_.first(); w;) {
      auto& r = static_cast<broadcast_receive_waiter<T>&>(*std::exchange(w, receivers_.after(*w)));
      // (A waiter whose context is shutting down stays for the shutdown to take out.)
      if (!r.claim_for_wake(wake.waker)) continue;
      receivers_.remove(r);
      r.cursor->receiving = nullptr;
      if (!r.ticket.claim()) {
        r.error = asio::error::operation_aborted;
      } else {
        take(*r.cursor, r.received, r);
      }
      wake.add(r);
    }
  }

  // Under the lock: drops the values every subscriber has received, then publishes the values of
  // waiting senders while there is room, first come, first served.
  void make_room(wakeups& wake) noexcept {
    for (;;) {
      while (!buffer_.empty() && buffer_.front().pending == 0) {
        wake.drop_later(std::move(buffer_.front().value));
        buffer_.pop_front();
        ++first_;
      }
      if (closed_ || full()) return;
      broadcast_waiter* sender = nullptr;
      for (broadcast_waiter* w = senders_.first(); w && !sender;) {
        broadcast_waiter& candidate = *std::exchange(w, senders_.after(*w));
        if (!candidate.claim_for_wake(wake.waker)) continue;
        senders_.remove(candidate);
        if (candidate.ticket.claim()) {
          sender = &candidate;
        } else {
          candidate.error = asio::error::operation_aborted;
          wake.add(candidate);
        }
      }
      if (!sender) return;
      auto& s = static_cast<broadcast_send_waiter<T>&>(*sender);
      wake.add(s);  // (before the receivers its value wakes: a sender resumes no later than they do)
      try {
        publish(std::move(s.value), wake);
      } catch (...) {
        s.exception = std::current_exception();
      }
    }
  }

  const std::size_t capacity_;
  const bool drops_oldest_;
  mutable std::mutex mutex_;
  std::deque<slot> buffer_;  // the values numbered [first_, next_)
  std::uint64_t first_ = 0;  // the number of the oldest buffered value
  std::uint64_t next_ = 0;   // the number the next value sent gets
  std::size_t subscribers_ = 0;
  waiter_queue<broadcast_waiter> senders_;
  waiter_queue<broadcast_waiter> receivers_;
  bool closed_ = false;
};

// A broadcast operation awaited by a coral task: the shared task-waiter machinery, plus how it
// fails.
template <class T, class Waiter>
class broadcast_task_waiter : public task_waiter<broadcast_state<T>, Waiter> {
 public:
  using task_waiter<broadcast_state<T>, Waiter>::task_waiter;
  broadcast_task_waiter(broadcast_task_waiter&&) noexcept = default;

  // For a branch of a race, instead of await_resume(): true, with the wait finished, if the
  // operation did not happen (operation_aborted: it lost, or was cancelled).
  bool lost_race() noexcept { return !this->exception && this->finish_if_aborted(); }

 protected:
  // Finishes the wait; false if it failed with channel_closed; throws any other failure.
  bool finish_ok(const char* what) {
    this->finish();
    if (!this->error && !this->exception) [[likely]]
      return true;
    if (this->exception) std::rethrow_exception(this->exception);
    if (this->error == errc::channel_closed) return false;
    throw_failure(what);
  }

 private:
  [[noreturn]] CORAL_NOINLINE void throw_failure(const char* what) {
    if constexpr (std::is_same_v<Waiter, broadcast_receive_waiter<T>>) {
      if (this->error == errc::lagged) throw lagged(this->missed);
    }
    throw boost::system::system_error(this->error, std::string("coral::broadcast_channel: ") + what);
  }
};

template <class T>
class broadcast_send_awaiter : public broadcast_task_waiter<T, broadcast_send_waiter<T>> {
 public:
  static constexpr wait_kind coral_wait_kind() noexcept { return wait_kind::channel_send; }
  // (The value is made here, before any lock is taken.)
  broadcast_send_awaiter(std::shared_ptr<broadcast_state<T>> state, T value)
      : broadcast_task_waiter<T, broadcast_send_waiter<T>>(std::move(state)) {
    this->value = adopt(new broadcast_value<T>(std::move(value)));
  }
  broadcast_send_awaiter(broadcast_send_awaiter&& other) noexcept
      : broadcast_task_waiter<T, broadcast_send_waiter<T>>(std::move(other)) {
    this->value = std::move(other.value);
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine, [this](broadcast_state<T>& s, task_segment* ctx) { return s.send(*this, ctx); });
  }
  // A select's first pass: sends if there is room.
  bool poll(task_segment& waker) {
    return this->poll_with(waker,
                           [this](broadcast_state<T>& s, task_segment* ctx) { return s.send(*this, ctx, false); });
  }

  void await_resume() {
    if (!this->finish_ok("send")) throw channel_closed("coral::broadcast_channel: send on a closed channel");
  }
};

// Receives the subscriber's next value (a reference to it); the derived awaiter's await_resume
// makes the task's copy.
template <class T>
class broadcast_receive_base : public broadcast_task_waiter<T, broadcast_receive_waiter<T>> {
 public:
  static constexpr wait_kind coral_wait_kind() noexcept { return wait_kind::channel_receive; }
  broadcast_receive_base(std::shared_ptr<broadcast_state<T>> state,
                         std::shared_ptr<broadcast_cursor<T>> cursor) noexcept
      : broadcast_task_waiter<T, broadcast_receive_waiter<T>>(std::move(state)) {
    this->cursor = std::move(cursor);
  }
  broadcast_receive_base(broadcast_receive_base&& other) noexcept
      : broadcast_task_waiter<T, broadcast_receive_waiter<T>>(std::move(other)) {
    this->cursor = std::move(other.cursor);
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine,
                            [this](broadcast_state<T>& s, task_segment* ctx) { return s.receive(*this, ctx); });
  }
  // A select's first pass: receives if a value is ready (or the subscriber lagged).
  bool poll(task_segment& waker) {
    return this->poll_with(waker,
                           [this](broadcast_state<T>& s, task_segment* ctx) { return s.receive(*this, ctx, false); });
  }

 protected:
  // Whether a value was received (false once the channel is closed and drained, or the
  // subscriber went); throws lagged or operation_aborted.
  bool finish_receive() { return this->finish_ok("receive"); }
  // The task's copy of the value received, made into what make(T) builds (see
  // broadcast_state::copy_for).
  template <class Make>
  auto copy(Make make) {
    return this->state_->copy_for(*this->cursor, std::move(this->received), make);
  }

  // A join passes the value received on as a loan of it (see loan), until the receiving task makes
  // its own T, with the one copy (or move) a plain receive makes. Each move of T after that could
  // throw and destroy the subscriber's T with the exception, and a join moves a result several
  // times; if the copy itself throws, the value goes back to the subscriber, as after a plain
  // receive. So does a value the join drops (a when_all whose sibling failed), or one whose
  // receiving task is destroyed before it takes it (its context shut down after the race was won).
  std::unique_ptr<loaned_base> lend() {
    try {
      return std::make_unique<broadcast_box<T>>(this->state_, this->cursor, std::move(this->received));
    } catch (...) {  // (the box could not be made: `received` is still here, and goes back)
      this->state_->give_back(*this->cursor, std::move(this->received));
      throw;
    }
  }

  ~broadcast_receive_base() {
    // (Handed a value, but the task was destroyed before it resumed: its context shut down.)
    if (this->received) this->state_->give_back(*this->cursor, std::move(this->received));
  }
};

template <class T>
class broadcast_receive_awaiter : public broadcast_receive_base<T> {
 public:
  using broadcast_receive_base<T>::broadcast_receive_base;
  T await_resume() {
    return resume_with([](auto&& v) { return T(std::forward<decltype(v)>(v)); });
  }

  // For a select: as await_resume(), but make(value) builds what holds the value (the select's
  // variant), with the subscriber's one copy.
  template <class Make>
  auto resume_with(Make make) {
    if (!this->finish_receive())
      throw channel_closed("coral::broadcast_channel: receive on a closed channel, all received");
    return this->copy(std::move(make));
  }

  // For a join: the outcome into the branch's result, the value lent (see lend).
  void resume_into(task_result<T>& result) {
    if (!this->finish_receive())
      throw channel_closed("coral::broadcast_channel: receive on a closed channel, all received");
    result.set_loan(loan<T>(this->lend()));
  }
};

template <class T>
class broadcast_next_awaiter : public broadcast_receive_base<T> {
 public:
  using broadcast_receive_base<T>::broadcast_receive_base;
  std::optional<T> await_resume() {
    if (!this->finish_receive()) return std::nullopt;
    return this->copy([](auto&& v) { return std::optional<T>(std::forward<decltype(v)>(v)); });
  }

  // As broadcast_receive_awaiter's: make gets the arguments that construct the std::optional<T>.
  template <class Make>
  auto resume_with(Make make) {
    if (!this->finish_receive()) return make(std::nullopt);
    return this->copy([&](auto&& v) { return make(std::in_place, std::forward<decltype(v)>(v)); });
  }

  void resume_into(task_result<std::optional<T>>& result) {
    if (!this->finish_receive()) return result.set_value(std::nullopt);
    result.set_loan(loan<std::optional<T>>::of_optional(this->lend()));
  }
};

}  // namespace coral::detail
