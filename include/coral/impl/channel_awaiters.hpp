#pragma once

// The rest of channel.hpp (which includes this at its end): what a task awaits for a channel operation.

#include <coroutine>
#include <memory>
#include <optional>
#include <utility>

#include "coral/detail/core/task_result.hpp"
#include "coral/detail/wait/task_waiter.hpp"
#include "coral/error.hpp"
#include "coral/impl/channel_state.hpp"

namespace coral::detail {

// A channel operation awaited by a coral task: the shared task-waiter machinery, plus how a
// channel operation fails.
template <class T, class Waiter>
class channel_task_waiter : public task_waiter<channel_state<T>, Waiter> {
 public:
  using task_waiter<channel_state<T>, Waiter>::task_waiter;
  channel_task_waiter(channel_task_waiter&&) noexcept = default;

  // After the wait, instead of await_resume(): if the operation ended with operation_aborted (it
  // did not happen), finishes the wait and returns true; else returns false and await_resume()
  // follows. A branch that lost its race ends this way, without an exception.
  bool lost_race() noexcept {
    if (this->error != asio::error::operation_aborted || this->exception) return false;
    this->finish();
    return true;
  }

 protected:
  // Rethrows a failure of T's move, or throws `error` (the operation's). The common case (no
  // failure) is an inline test.
  void check(const char* what) {
    if (!this->error && !this->exception) [[likely]]
      return;
    fail(what);
  }
  CORAL_NOINLINE void fail(const char* what) {
    if (this->exception) std::rethrow_exception(this->exception);
    if (this->error == errc::channel_closed) throw channel_closed(std::string("coral::channel: ") + what);
    if (this->error) throw boost::system::system_error(this->error, std::string("coral::channel: ") + what);
  }
};

template <class T>
class channel_send_awaiter : public channel_task_waiter<T, send_waiter<T>> {
 public:
  static constexpr wait_kind coral_wait_kind() noexcept { return wait_kind::channel_send; }
  channel_send_awaiter(std::shared_ptr<channel_state<T>> state, T value)
      : channel_task_waiter<T, send_waiter<T>>(std::move(state)), value_(std::move(value)) {
    this->value = &value_;
  }
  channel_send_awaiter(channel_send_awaiter&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : channel_task_waiter<T, send_waiter<T>>(std::move(other)), value_(std::move(other.value_)) {
    this->value = &value_;
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine, [this](channel_state<T>& s, task_segment* ctx) { return s.send(*this, ctx); });
  }
  bool poll(task_segment& waker) {
    return this->poll_with(waker, [this](channel_state<T>& s, task_segment* ctx) { return s.send(*this, ctx, false); });
  }

  void await_resume() {
    this->finish();
    this->check("send on a closed channel");
  }

 private:
  T value_;
};

// Receives an item; the derived awaiter's await_resume hands its value over (channel_state::
// deliver), in the one move that makes it the receiving task's.
template <class T>
class channel_receive_base : public channel_task_waiter<T, receive_waiter<T>> {
 public:
  static constexpr wait_kind coral_wait_kind() noexcept { return wait_kind::channel_receive; }
  explicit channel_receive_base(std::shared_ptr<channel_state<T>> state)
      : channel_task_waiter<T, receive_waiter<T>>(std::move(state)) {
    this->destination = &received_;
  }
  channel_receive_base(channel_receive_base&& other) noexcept
      : channel_task_waiter<T, receive_waiter<T>>(std::move(other)) {
    this->destination = &received_;
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine,
                            [this](channel_state<T>& s, task_segment* ctx) { return s.receive(*this, ctx); });
  }
  bool poll(task_segment& waker) {
    return this->poll_with(waker,
                           [this](channel_state<T>& s, task_segment* ctx) { return s.receive(*this, ctx, false); });
  }

 protected:
  // The item received, or null once the channel is closed and drained; throws on cancellation.
  channel_item<T>* take() {
    this->finish();
    // (A channel closed with a cause fails its receivers with the cause.)
    if (this->exception || (this->error && this->error != errc::channel_closed)) [[unlikely]]
      this->fail("receive");
    return received_ ? &*received_ : nullptr;
  }

  // (The item is spent afterwards: delivered, or given back.)
  template <class Receiver>
  decltype(auto) deliver(channel_item<T>& item, Receiver to_receiver) {
    spent_when_done spent{received_};
    return this->state_->deliver(item, std::move(to_receiver));
  }

  // The box of `item`, lent to the receiving task (see loan).
  std::unique_ptr<loaned_base> lend(channel_item<T>& item) noexcept {
    spent_when_done spent{received_};
    return item.lend(this->state_);
  }

  ~channel_receive_base() {
    // (Handed a value, but the task was destroyed before it resumed: its context shut down. Only a
    // failed allocation loses the value here: there is no room for it in the buffer.)
    if (received_) {
      try {
        this->state_->give_back(std::move(*received_));
      } catch (...) {
      }
    }
  }

  // For a T whose move may throw, a join passes a received value on boxed, as a loan, until the
  // receiving task takes it by its one move (the value is the channel's until then: if that move
  // throws, it goes back, as after a plain receive). Each move of T after the value left the box
  // could throw and destroy the value with the exception, and a join moves a result several times
  // (into the branch's result, the variant, the result of the task built on the join, out to the
  // awaiting task); a T whose move cannot throw is moved on as usual.
  static constexpr bool lends = loanable_v<T>;

 private:
  struct spent_when_done {
    std::optional<channel_item<T>>& item;
    ~spent_when_done() { item.reset(); }
  };

  std::optional<channel_item<T>> received_;
};

template <class T>
class channel_receive_awaiter : public channel_receive_base<T> {
 public:
  using channel_receive_base<T>::channel_receive_base;
  T await_resume() {
    auto* item = this->take();
    if (!item) throw channel_closed("coral::channel: receive on a closed and empty channel");
    return this->deliver(*item, [](T&& value) { return T(std::move(value)); });
  }

  // For a select: as await_resume(), but make(value) builds what holds the value (the select's
  // variant), with the value's one move.
  template <class Make>
  decltype(auto) resume_with(Make make) {
    auto* item = this->take();
    if (!item) throw channel_closed("coral::channel: receive on a closed and empty channel");
    return this->deliver(*item, [&](T&& value) -> decltype(auto) { return make(std::move(value)); });
  }

  // For a join: the outcome into the branch's result, the value lent if it may be (see lends).
  void resume_into(task_result<T>& result) {
    if constexpr (channel_receive_base<T>::lends) {
      auto* item = this->take();
      if (!item) throw channel_closed("coral::channel: receive on a closed and empty channel");
      result.set_loan(loan<T>(this->lend(*item)));
    } else {
      resume_with([&](T&& value) { result.set_value(std::move(value)); });
    }
  }
};

template <class T>
class channel_next_awaiter : public channel_receive_base<T> {
 public:
  using channel_receive_base<T>::channel_receive_base;
  std::optional<T> await_resume() {
    auto* item = this->take();
    if (!item) return std::nullopt;
    return this->deliver(*item, [](T&& value) { return std::optional<T>(std::in_place, std::move(value)); });
  }

  // As channel_receive_awaiter's: make gets the arguments that construct the std::optional<T>.
  template <class Make>
  decltype(auto) resume_with(Make make) {
    auto* item = this->take();
    if (!item) return make(std::nullopt);
    return this->deliver(*item, [&](T&& value) -> decltype(auto) { return make(std::in_place, std::move(value)); });
  }

  void resume_into(task_result<std::optional<T>>& result) {
    if constexpr (channel_receive_base<T>::lends) {
      auto* item = this->take();
      if (!item) return result.set_value(std::nullopt);
      result.set_loan(loan<std::optional<T>>::of_optional(this->lend(*item)));
    } else {
      resume_with([&](auto&&... a) { result.set_value(std::forward<decltype(a)>(a)...); });
    }
  }
};

template <class T>
class channel_receive_into_awaiter : public channel_receive_base<T> {
 public:
  channel_receive_into_awaiter(std::shared_ptr<channel_state<T>> state, T& target)
      : channel_receive_base<T>(std::move(state)), target_(&target) {}
  void await_resume() {
    auto* item = this->take();
    if (!item) throw channel_closed("coral::channel: receive on a closed and empty channel");
    this->deliver(*item, [this](T&& value) { *target_ = std::move(value); });
  }

 private:
  T* target_;
};

}  // namespace coral::detail
