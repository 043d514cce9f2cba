#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/channel.hpp"
#include "coral/error.hpp"

namespace coral {

template <class T>
class broadcast_subscriber;

namespace detail {
template <class T>
struct broadcast_cursor;
template <class T>
class broadcast_state;
template <class T>
class broadcast_send_awaiter;
template <class T>
class broadcast_receive_awaiter;
template <class T>
class broadcast_next_awaiter;
}  // namespace detail

// A channel on which every value sent goes to every subscriber (tokio's broadcast), usable across
// threads and executors by coral tasks.
//
//   coral::broadcast_channel<T> b(capacity);                       // a send waits for the slowest
//   coral::broadcast_channel<T> b(capacity, overflow::drop_oldest); // a send never waits
//   auto sub = b.subscribe();                // a broadcast_subscriber<T>: every value sent from now on
//   co_await b.send(v);                      // b.try_send(v): false if it would wait
//   T v = co_await sub.receive();            // the subscriber's next value
//   while (auto v = co_await sub.next()) ... // nullopt once closed and all received
//   b.close();
//
// Semantics:
// - Every subscriber receives every value sent after it subscribed, in the order sent (sends from
//   several tasks: the order in which they took their place in the buffer). A value sent while
//   nobody is subscribed is received by nobody; the send succeeds.
// - overflow::wait (the default): a send waits while the buffer is full, that is while the
//   slowest subscriber has `capacity` values still to receive; nothing is lost. Waiting senders
//   are served first come, first served.
// - overflow::drop_oldest: a send never waits; with the buffer full, the oldest value is dropped
//   to make room. A subscriber that had not received it gets coral::lagged from its next receive
//   (missed(): how many values it lost), which moves it on to the oldest value still buffered;
//   the receive after that gets that value (tokio's rule). So each subscriber receives, in order,
//   every value sent after it subscribed but those its lagged errors count.
//   Other policies throw std::invalid_argument, as does capacity 0.
// - Values are stored once, in the channel (one allocation per value sent, made by the send).
//   Each subscriber's receive yields its own T: a copy of the stored value, made in the receiving
//   task as it resumes, except that a subscriber that is the last to hold a value gets the stored
//   value moved. So T is copied at most once per subscriber, and must be copy-constructible.
// - A value leaves the buffer once every subscriber has received it. Destroying a subscriber (or
//   moving another over it) releases its hold on the buffer at once: a sender waiting for it
//   proceeds. A receive of that subscriber waiting meanwhile fails with channel_closed.
// - One receive at a time per subscriber (two at once throw std::logic_error): a subscriber is
//   one reader's place in the stream. For several tasks, subscribe several times.
// - close(): waiting and later sends fail with channel_closed, their value not sent. Each
//   subscriber still receives the values buffered for it, then its receives fail with
//   channel_closed (next() gives nullopt). Destroying the channel closes it; subscribers may
//   outlive it.
// - A waiting task is resumed on its own executor: on the spot when the task that completes its
//   operation runs on the same executor, otherwise through a post to its executor. No lock is
//   held while a task is resumed.
// - send, receive and next can be raced and timed out (when_any, with_timeout, `||`): one that
//   lost did not happen (a send sent nothing; a receive took nothing: the subscriber's place is
//   unchanged).
// - Cancellation (job.cancel(), a completion token's slot, a parent's cancellation): a waiting
//   operation fails with boost::system::system_error(operation_aborted); a cancelled send sent
//   nothing and a cancelled receive took nothing. A task already cancelled fails at once.
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later send or close() does not touch it. A value
//   already handed to the task (also to a race it won) goes back to the subscriber.
// - No code of T runs under the channel's lock, so T's constructors and destructor may use the
//   channel. If the copy (or move) for a subscriber throws, that subscriber's receive fails with
//   the exception and took nothing: its next receive gets the value again. A receive in a join
//   too: the join passes the value on uncopied, and the copy is made into what the task gets (a
//   when_all's copies stay provisional until its whole tuple is made; a value a join drops goes
//   back). If moving the value into the channel throws, send() (or try_send()) throws it, having
//   sent nothing.
//
// Thread safety: distinct objects: safe. Shared objects: safe for broadcast_channel (every member
// may be called from any thread, concurrently); a broadcast_subscriber is one reader's, used by one
// task at a time.
template <class T>
class broadcast_channel {
  static_assert(std::is_copy_constructible_v<T>, "coral::broadcast_channel: every subscriber gets a copy of T");
  using state_type = detail::broadcast_state<T>;

 public:
  using value_type = T;
  using subscriber = broadcast_subscriber<T>;

  explicit broadcast_channel(std::size_t capacity, overflow policy = overflow::wait)
      : state_(std::make_shared<state_type>(capacity, drops_oldest(policy))) {}
  ~broadcast_channel() { state_->close(); }
  broadcast_channel(const broadcast_channel&) = delete;
  broadcast_channel& operator=(const broadcast_channel&) = delete;

  // A subscriber that receives every value sent from now on.
  [[nodiscard]] broadcast_subscriber<T> subscribe() { return broadcast_subscriber<T>(state_, state_->subscribe()); }

  // co_await b.send(v): buffers v for every subscriber, waiting for room under overflow::wait.
  [[nodiscard]] detail::broadcast_send_awaiter<T> send(T value) { return {state_, std::move(value)}; }

  // Sends without waiting; false (and `value` left untouched) if that would wait or the channel is
  // closed.
  bool try_send(T& value) { return state_->try_send(value); }
  bool try_send(T&& value) { return state_->try_send(value); }

  void close() { state_->close(); }
  bool closed() const { return state_->closed(); }
  // Values buffered: those some subscriber has yet to receive (at most capacity()).
  std::size_t size() const { return state_->size(); }
  std::size_t capacity() const noexcept { return state_->capacity(); }
  std::size_t subscriber_count() const { return state_->subscriber_count(); }

 private:
  static bool drops_oldest(overflow policy) {
    if (policy == overflow::drop_latest) {
      throw std::invalid_argument(
          "coral::broadcast_channel: overflow::drop_latest is not supported (overflow::wait or overflow::drop_oldest)");
    }
    return policy == overflow::drop_oldest;
  }

  std::shared_ptr<state_type> state_;
};

// One reader's place in a broadcast_channel's stream of values (see broadcast_channel). Move-only;
// a moved-from subscriber is unsubscribed: its receives fail with channel_closed.
template <class T>
class broadcast_subscriber {
 public:
  using value_type = T;

  broadcast_subscriber(broadcast_subscriber&& other) noexcept
      : state_(other.state_), cursor_(std::move(other.cursor_)) {}
  broadcast_subscriber& operator=(broadcast_subscriber&& other) noexcept {
    if (this != &other) {
      unsubscribe();
      state_ = other.state_;
      cursor_ = std::move(other.cursor_);
    }
    return *this;
  }
  ~broadcast_subscriber() { unsubscribe(); }

  // T v = co_await sub.receive(): the next value; throws lagged if values were dropped before this
  // subscriber received them, channel_closed once the channel is closed and all received.
  [[nodiscard]] detail::broadcast_receive_awaiter<T> receive() { return {state_, cursor()}; }
  // std::optional<T> v = co_await sub.next(): as receive(), nullopt once closed and all received.
  [[nodiscard]] detail::broadcast_next_awaiter<T> next() { return {state_, cursor()}; }
  // Receives without waiting: nullopt if no value is ready; throws lagged as receive() does.
  std::optional<T> try_receive() { return cursor_ ? state_->try_receive(*cursor_) : std::nullopt; }

 private:
  friend class broadcast_channel<T>;
  broadcast_subscriber(std::shared_ptr<detail::broadcast_state<T>> state,
                       std::shared_ptr<detail::broadcast_cursor<T>> cursor) noexcept
      : state_(std::move(state)), cursor_(std::move(cursor)) {}

  // (A moved-from subscriber's receives get a cursor that is not subscribed.)
  std::shared_ptr<detail::broadcast_cursor<T>> cursor() const {
    if (cursor_) [[likely]]
      return cursor_;
    return detail::broadcast_state<T>::unsubscribed_cursor();
  }

  void unsubscribe() noexcept {
    if (cursor_) state_->unsubscribe(*cursor_);
  }

  std::shared_ptr<detail::broadcast_state<T>> state_;    // (kept when moved from)
  std::shared_ptr<detail::broadcast_cursor<T>> cursor_;  // null once moved from
};

}  // namespace coral

#include "coral/impl/broadcast_channel.hpp"
