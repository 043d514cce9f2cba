#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <utility>

#include "coral/detail/sync/sync_state.hpp"
#include "coral/error.hpp"
#include "coral/impl/watch_changed.hpp"

namespace coral {

// The latest value of something that changes, for any number of coral tasks to follow (tokio's
// watch channel): a sender replaces the value without waiting, and each receiver waits for a value
// newer than the one it last read. Values in between may be skipped; the latest never is.
//
//   coral::watch<config> w(initial);         // holds `initial`, version 0
//   w.send(next);                             // replaces the value; never waits
//   auto r = w.subscribe();                   // a receiver that has read the current value
//   co_await r.changed();                     // waits for a newer value, marks it read
//   config c = r.get();                       // the latest value (a copy), marked read
//   std::shared_ptr<const config> p = r.borrow();  // the same, without copying (any T)
//   r.has_changed();                          // whether there is a value r has not read
//   w.close();                                // receivers' changed() fail with channel_closed
//
// Semantics:
// - Every send() makes a new version. A receiver remembers the version it last read: subscribe()
//   starts it at the current one; get(), borrow() and a successful changed() mark the newest as
//   read. changed() completes at once if there is a newer version than the receiver read, else
//   waits for the next send(). A receiver never reads an older version than one it read before,
//   and once the sends stop, every receiver's next changed() or get() has the last value.
// - send() wakes every waiting receiver, in the order they began to wait, each posted to its own
//   executor, never resumed inside send(). No lock of coral's is held while a task resumes or
//   while T is copied, moved or destroyed.
// - close() (and destroying the watch) fails every waiting changed() with coral::channel_closed
//   (errc::channel_closed). As in tokio, a changed() after close() whose receiver has not read the
//   last value still completes (marking it read); the next one fails. get() and borrow() go on
//   returning the last value. send() after close() throws channel_closed and changes nothing.
// - changed() can be raced and timed out (when_any, with_timeout, `||`, a select), and is
//   cancellable (operation_aborted, level-triggered: a task already cancelled fails at once). A
//   changed() that failed marked nothing read.
// - If the execution context of a waiting task shuts down, the wait is abandoned and the task's
//   frames are destroyed with the context; a later send() or close() does not touch it.
// - T may be move-only: the value is kept as a std::shared_ptr<const T>, so a send() moves its
//   argument once into a new allocation, and borrow() shares it without copying. get() copies it
//   (for a copyable T only); it is never modified in place, so a borrowed value stays as it was.
//
// Thread safety: watch: distinct objects: safe; shared objects: safe (every member may be called
// from any thread, concurrently). receiver: distinct objects: safe (each task subscribes, or copies
// a receiver, for its own); shared objects: unsafe (it remembers what it read).
template <class T>
class watch {
 public:
  class receiver;

  explicit watch(T initial)
      : state_(std::make_shared<detail::watch_state<T>>(std::make_shared<const T>(std::move(initial)))) {}
  ~watch() { close(); }
  watch(const watch&) = delete;
  watch& operator=(const watch&) = delete;

  // Replaces the value; every waiting receiver is posted to its executor. Throws channel_closed,
  // changing nothing, after close(). If making the new value throws, nothing changed either.
  void send(T value) {
    if (!state_->send(std::make_shared<const T>(std::move(value))))
      throw channel_closed("coral::watch: send() after close()");
  }

  // A receiver that has read the current value.
  [[nodiscard]] receiver subscribe() const { return receiver(state_, state_->latest().second); }

  // The latest value, as a copy or shared (for the sender's own use; nothing is marked read).
  T get() const requires std::copy_constructible<T> { return *state_->latest().first; }
  std::shared_ptr<const T> borrow() const { return state_->latest().first; }

  void close() noexcept { state_->close(make_error_code(errc::channel_closed)); }
  bool closed() const { return state_->closed(); }

 private:
  std::shared_ptr<detail::watch_state<T>> state_;
};

template <class T>
class watch<T>::receiver {
 public:
  // co_await r.changed(): returns once there is a value newer than the one this receiver last
  // read, and marks it read. Fails with channel_closed once the watch is closed and the last
  // value was read.
  [[nodiscard]] detail::watch_changed_awaiter changed() { return detail::watch_changed_awaiter(state_, seen_); }

  // The latest value (a copy), marked read.
  T get() requires std::copy_constructible<T> { return *borrow(); }

  // The latest value, shared and immutable, marked read.
  std::shared_ptr<const T> borrow() {
    auto [value, version] = state_->latest();
    seen_ = version;
    return std::move(value);
  }

  // Whether the watch has a value this receiver has not read (never waits, marks nothing).
  bool has_changed() const { return state_->version() != seen_; }

 private:
  friend class watch;
  receiver(std::shared_ptr<detail::watch_state<T>> state, std::uint64_t seen) noexcept
      : state_(std::move(state)), seen_(seen) {}

  std::shared_ptr<detail::watch_state<T>> state_;
  std::uint64_t seen_;  // the version last read
};

}  // namespace coral
