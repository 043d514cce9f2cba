#pragma once

#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/channel/channel_fwd.hpp"
#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/config.hpp"
#include "coral/error.hpp"

namespace coral {

// What a full bounded channel does with a send (Kotlin's BufferOverflow).
enum class overflow {
  wait,         // the send waits for room
  drop_oldest,  // the oldest buffered value is dropped to make room; the send never waits
  drop_latest,  // the value being sent is dropped; the send never waits
};

// channel<T>(unlimited): a buffer without bound (a send never waits; memory grows).
inline constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();
// channel<T>(conflated): capacity 1, overflow::drop_oldest.
// Thread safety: distinct objects: safe. Shared objects: safe (an empty tag).
struct conflated_t {
  explicit conflated_t() = default;
};
inline constexpr conflated_t conflated{};

// A multi-producer, multi-consumer channel of T values, usable across threads and executors, by
// coral tasks and by plain Asio code alike.
//
//   channel<T> ch(capacity);                 // capacity 0: rendezvous (a send waits for a receiver)
//   channel<T> ch(unlimited);                // a send never waits
//   channel<T> ch(n, overflow::drop_oldest); // or drop_latest: a send never waits, a full buffer drops
//   channel<T> ch(conflated);                // capacity 1, drop_oldest: receivers get the latest value
//   co_await ch.send(v);  co_await (ch << v);
//   T v = co_await ch.receive();  co_await (ch >> v);
//   while (auto v = co_await ch.next()) ...  // nullopt once closed and drained
//   ch.try_send(v); ch.try_receive(); ch.close();
//   ch.async_send(v, token);                 // void(boost::system::error_code)
//   ch.async_receive(token);                 // void(boost::system::error_code, T)
//
// Semantics:
// - Values are received in the order they were sent; waiting senders and receivers are served
//   first come, first served.
// - A waiting task is resumed on its own executor: on the spot when the task that completes its
//   operation runs on the same executor (no queue hop), otherwise through a post to its executor.
//   An async_* handler is never invoked inside async_send / async_receive, nor inside the call
//   that completes it (a send, a receive, close()): its completion is posted to its associated
//   executor (the system executor if it has none, as asio::post does), where its cancellation
//   slot is cleared too, and its associated allocator allocates the operation and the posted
//   completion. (An executor that runs what is posted to it at once, as coral::inline_executor
//   does, runs the handler there and then.)
// - close(): values already buffered stay receivable. Waiting and later senders fail with
//   channel_closed (errc::channel_closed for async_send) and their value is not delivered;
//   receivers fail with channel_closed (next() gives nullopt) once the buffer is empty. Nothing is
//   dropped silently: a send either hands its value on or fails (except under an overflow policy
//   that drops, which is what it asks for). close(cause) ends the receivers with `cause`. A
//   select (when_any) waiting on the channel is decided by the close: it fails with
//   channel_closed, and none of its other branches happens after the close.
// - Overflow policies (capacity >= 1): drop_oldest destroys the oldest buffered value to make room
//   for the new one; drop_latest destroys the value being sent. Either way the send succeeds at
//   once (it has taken its value) and never waits; values still come out in the order sent.
// - Cancellation (job.cancel(), a task's or a handler's cancellation slot): a waiting operation
//   fails with operation_aborted; a cancelled receive consumes no value and a cancelled send
//   delivers none. It does not close or otherwise affect the channel.
// - Destroying the channel, or assigning another one over it, closes it: its waiters fail with
//   channel_closed, and nothing touches the channel afterwards.
// - A moved-from channel is a closed, empty channel of capacity 0 (see the move constructor).
// - If the execution context of a waiting task shuts down, the wait is abandoned (the task's
//   frames are destroyed with the context); a later close() does not touch it.
// - No lock is held while a coroutine is resumed or a handler runs; T's move constructor and
//   destructor run under the channel's lock.
// - If T's move throws (and leaves its source as it was, as a move that throws should), nothing is
//   lost. A value that could not be moved stays with its owner and the waiting counterpart stays
//   queued (the operation that moved throws; a sender whose value could not be moved into the
//   buffer fails with that exception). A received value is the channel's until the receiver has
//   it: if the last move, into the receiving task's variable (receive(), next(), operator>>,
//   try_receive()), throws, the value goes back into the channel, first in line (to the next
//   waiting receiver, else the front of the buffer, past its capacity if need be, also if the
//   channel has been closed since), and the receive fails with the exception: it did not happen.
//   That last move is the only one after the value left the buffer or its sender (a T whose move
//   may throw travels boxed, one allocation per value). async_receive moves the value only into
//   the handler's argument (not at all for a handler that takes T&&); if that move throws, the
//   exception leaves the handler's invocation as one the handler threw would (out of the
//   executor's run()), and the value goes with it: the channel cannot tell that exception from
//   one thrown by the handler's body, after which the value was the handler's.
//   A raced receive (when_any, `||`, with_timeout, and what is built of them) keeps that rule:
//   its value stays in its box, the channel's, while the join passes it on (through the branch's
//   result and the tasks that `||` and with_timeout are), and the receiving task's move of it
//   into the result it gets (the variant, the value) is the one move; if it throws, the value
//   goes back as above. (Moving on an unboxed value would be a move that could throw after the
//   value had left the channel, and no move after that could safely put it back.) A job reads
//   its result in place: it takes the value out of its box (the one move) when its task ends,
//   and fails with the exception if that move throws; get_result() then moves the job's value as
//   it moves any job's. when_all copies each value out of its box, and the boxes stay the
//   channels' until its whole tuple is made: if any copy or move of it throws, every value goes
//   back (a T that cannot be copied is moved out, and is lost if a later part of the tuple
//   throws). A boxed value a join drops (a when_all whose sibling failed) or that never reaches
//   its task (the task's context shut down after the race was won) goes back too. The limit:
//   `a && b` moves its tuple on (into its own task's result, then to the awaiting task), and a
//   move that throws there destroys the values. An unboxed value (a T whose move cannot throw)
//   that a join drops, or whose task dies after the race was won and before it resumed, is
//   destroyed. A value handed to a waiting receive whose task is destroyed before it resumed (its
//   context shut down) goes back to the channel, first in line.
//
// Thread safety: distinct objects: safe. Shared objects: safe (every member may be called from
// any thread, concurrently), except assignment.
template <class T>
class channel {
  using state_type = detail::channel_state<T>;

 public:
  using value_type = T;

  explicit channel(std::size_t capacity = 0, overflow policy = overflow::wait)
      : state_(std::make_shared<state_type>(capacity, policy)) {}
  // capacity 1, overflow::drop_oldest: a receiver always gets the latest value.
  explicit channel(conflated_t) : channel(1, overflow::drop_oldest) {}
  ~channel() {
    if (state_) state_->close();
  }
  // The moved-from channel behaves as one that is closed and empty, with capacity 0: a send fails
  // with channel_closed (try_send returns false, async_send completes with errc::channel_closed), a
  // receive fails with channel_closed (next() gives nullopt, try_receive() nullopt), closed() is
  // true, size() and capacity() are 0 and close() does nothing. Assigning a channel to it makes it
  // that channel.
  channel(channel&&) noexcept = default;
  // Replacing a channel closes the old one, as destroying it would.
  channel& operator=(channel&& other) noexcept {
    if (this != &other) {
      if (state_) state_->close();
      state_ = std::move(other.state_);
    }
    return *this;
  }

  // co_await ch.send(v): hands v to a waiting receiver or the buffer, else waits for room.
  detail::channel_send_awaiter<T> send(T value) { return {shared_state(), std::move(value)}; }
  detail::channel_send_awaiter<T> operator<<(T value) { return send(std::move(value)); }

  // T v = co_await ch.receive(): the next value; throws channel_closed once closed and empty.
  detail::channel_receive_awaiter<T> receive() { return detail::channel_receive_awaiter<T>(shared_state()); }
  // co_await (ch >> v): receive() into v.
  detail::channel_receive_into_awaiter<T> operator>>(T& target) { return {shared_state(), target}; }
  // std::optional<T> v = co_await ch.next(): as receive(), nullopt once closed and empty.
  detail::channel_next_awaiter<T> next() { return detail::channel_next_awaiter<T>(shared_state()); }

  // Sends without waiting; false (and `value` left untouched) if that would wait or the channel
  // is closed.
  bool try_send(T& value) { return state_ && state_->try_send(value, nullptr); }
  bool try_send(T&& value) { return state_ && state_->try_send(value, nullptr); }
  // Receives without waiting; nullopt if no value is ready.
  std::optional<T> try_receive() { return state_ ? state_->try_receive(nullptr) : std::nullopt; }

  void close() {
    if (state_) state_->close();
  }
  // Closes the channel with a cause: once the buffered values are received, receivers get
  // `cause` rethrown instead of channel_closed (async_receive: channel_closed). Senders fail
  // with channel_closed. Only the first close sets the cause.
  void close(std::exception_ptr cause) {
    if (state_) state_->close(std::move(cause));
  }
  bool closed() const { return !state_ || state_->closed(); }
  // Values in the buffer now (past capacity() by the values given back after a failed last move).
  std::size_t size() const { return state_ ? state_->size() : 0; }
  std::size_t capacity() const noexcept { return state_ ? state_->capacity() : 0; }

  // Asio-style send: completion signature void(boost::system::error_code).
  template <class CompletionToken>
  auto async_send(T value, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [](auto handler, std::shared_ptr<state_type> state, T value) {
          using op_type = detail::channel_async_op<T, detail::send_waiter<T>, decltype(handler)>;
          op_type::start(std::move(state), std::move(handler), std::optional<T>(std::move(value)),
                         [](state_type& s, op_type& op) { return s.send(op, nullptr); });
        },
        token, shared_state(), std::move(value));
  }

  // Asio-style receive: completion signature void(boost::system::error_code, T).
  template <class CompletionToken>
  auto async_receive(CompletionToken&& token) {
    static_assert(std::is_default_constructible_v<T>,
                  "coral::channel::async_receive needs a default-constructible T (passed with an error); "
                  "use co_await ch.receive() or ch.next() for other types");
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, T)>(
        [](auto handler, std::shared_ptr<state_type> state) {
          using op_type = detail::channel_async_op<T, detail::receive_waiter<T>, decltype(handler)>;
          op_type::start(std::move(state), std::move(handler), std::nullopt,
                         [](state_type& s, op_type& op) { return s.receive(op, nullptr); });
        },
        token, shared_state());
  }

 private:
  friend struct detail::channel_access;
  explicit channel(std::shared_ptr<state_type> state) noexcept : state_(std::move(state)) {}

  // What an operation works on: the channel's state, or for a moved-from channel one that is
  // closed and empty (made once, shared by every moved-from channel<T>).
  const std::shared_ptr<state_type>& shared_state() const {
    if (state_) [[likely]]
      return state_;
    return closed_and_empty();
  }
  // (Out of line: the common path above stays small enough to inline.)
  CORAL_NOINLINE static const std::shared_ptr<state_type>& closed_and_empty() {
    static const std::shared_ptr<state_type> state = [] {
      auto made = std::make_shared<state_type>(0, overflow::wait);
      made->close();
      return made;
    }();
    return state;
  }

  std::shared_ptr<state_type> state_;  // null once moved from
};

}  // namespace coral

#include "coral/impl/channel_async_op.hpp"
#include "coral/impl/channel_awaiters.hpp"
