#pragma once

#include <boost/asio/system_executor.hpp>
#include <coroutine>
#include <memory>
#include <optional>
#include <utility>

#include "coral/detail/channel_state.hpp"
#include "coral/error.hpp"

namespace coral::detail {

// Installed in a waiting operation's cancellation slot. It holds the channel's state, not the
// channel, so a cancellation after the channel is gone touches nothing dead; it completes the
// operation only if it still waits.
template <class T>
struct channel_cancellation {
  std::shared_ptr<channel_state<T>> state;
  channel_waiter* waiter;
  void operator()(asio::cancellation_type) const {
    if (state->cancel(*waiter)) waiter->wake(nullptr);
  }
};

// How deep channel hand-offs may resume waiting tasks on the waker's stack before they are
// posted instead (a chain of tasks each waking the next).
inline constexpr unsigned max_inline_wakes = 16;
inline constinit thread_local unsigned inline_wake_depth = 0;

// The part of a channel operation awaited by a coral task that does not depend on its direction:
// resuming the task on its executor, and cancelling the wait through the task's cancellation
// slot.
template <class T, class Waiter>
class channel_task_waiter : public Waiter {
 public:
  using coral_awaitable = void;

  explicit channel_task_waiter(std::shared_ptr<channel_state<T>> state) noexcept : state_(std::move(state)) {}
  channel_task_waiter(const channel_task_waiter&) = delete;
  channel_task_waiter& operator=(const channel_task_waiter&) = delete;
  ~channel_task_waiter() = default;

  bool await_ready() const noexcept { return false; }

  // A counterpart on the same executor resumes the task right here (no queue hop); anyone else
  // posts it to its executor.
  void wake(task_context* waker) noexcept override {
    if (waker && inline_wake_depth < max_inline_wakes && waker->executor == context_->executor) {
      ++inline_wake_depth;
      auto keep = std::move(keep_);
      coroutine_.resume();
      --inline_wake_depth;
    } else {
      asio::post(context_->executor, resume_handler{coroutine_, std::move(keep_)});
    }
  }

 protected:
  // Runs `operation` (the channel's send or receive); returns whether the task must suspend.
  // Everything a waker needs is in place before the operation can link this waiter.
  template <class Promise, class Operation>
  bool suspend_on(std::coroutine_handle<Promise> coroutine, Operation operation) {
    context_ = &coroutine.promise().context();
    throw_if_cancelled(*context_);
    coroutine_ = coroutine;
    keep_ = keep_alive(context_->root);
    slot_ = context_->root->cancellation_slot();
    if (slot_.is_connected()) slot_.template emplace<channel_cancellation<T>>(state_, this);
    if (operation(*state_, context_)) {
      finish_waiting();
      return false;
    }
    return true;
  }

  // On the task's executor, once the operation is complete: the cancellation handler must go.
  void finish_waiting() noexcept {
    keep_.reset();
    if (slot_.is_connected()) slot_.clear();
  }

  std::shared_ptr<channel_state<T>> state_;

 private:
  task_context* context_ = nullptr;
  std::coroutine_handle<> coroutine_;
  keep_alive keep_;
  asio::cancellation_slot slot_;
};

template <class T>
class channel_send_awaiter : public channel_task_waiter<T, send_waiter<T>> {
 public:
  channel_send_awaiter(std::shared_ptr<channel_state<T>> state, T value)
      : channel_task_waiter<T, send_waiter<T>>(std::move(state)), value_(std::move(value)) {
    this->value = &value_;
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine, [this](channel_state<T>& s, task_context* ctx) { return s.send(*this, ctx); });
  }

  void await_resume() {
    this->finish_waiting();
    if (this->error == errc::channel_closed) throw channel_closed("coral::channel: send on a closed channel");
    if (this->error) throw boost::system::system_error(this->error, "coral::channel: send");
  }

 private:
  T value_;
};

// Receives into an optional; what await_resume makes of it is up to the derived awaiter.
template <class T>
class channel_receive_base : public channel_task_waiter<T, receive_waiter<T>> {
 public:
  explicit channel_receive_base(std::shared_ptr<channel_state<T>> state)
      : channel_task_waiter<T, receive_waiter<T>>(std::move(state)) {
    this->slot = &received_;
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine,
                            [this](channel_state<T>& s, task_context* ctx) { return s.receive(*this, ctx); });
  }

 protected:
  // The value, or nullopt once the channel is closed and drained; throws on cancellation.
  std::optional<T> take() {
    this->finish_waiting();
    if (this->error && this->error != errc::channel_closed) {
      throw boost::system::system_error(this->error, "coral::channel: receive");
    }
    return std::move(received_);
  }

 private:
  std::optional<T> received_;
};

template <class T>
class channel_receive_awaiter : public channel_receive_base<T> {
 public:
  using channel_receive_base<T>::channel_receive_base;
  T await_resume() {
    auto v = this->take();
    if (!v) throw channel_closed("coral::channel: receive on a closed and empty channel");
    return std::move(*v);
  }
};

template <class T>
class channel_next_awaiter : public channel_receive_base<T> {
 public:
  using channel_receive_base<T>::channel_receive_base;
  std::optional<T> await_resume() { return this->take(); }
};

template <class T>
class channel_receive_into_awaiter : public channel_receive_base<T> {
 public:
  channel_receive_into_awaiter(std::shared_ptr<channel_state<T>> state, T& target)
      : channel_receive_base<T>(std::move(state)), target_(&target) {}
  void await_resume() {
    auto v = this->take();
    if (!v) throw channel_closed("coral::channel: receive on a closed and empty channel");
    *target_ = std::move(*v);
  }

 private:
  T* target_;
};

// A channel operation started by plain Asio code (async_send / async_receive with any completion
// token). It owns the handler and, for a send, the value; it deletes itself when it completes.
// The handler runs on its associated executor (inline on the completing thread if it has none),
// and its associated cancellation slot cancels the wait.
template <class T, class Waiter, class Handler>
class channel_async_op final : public Waiter {
 public:
  // `value` is the value to send (for a receive: nullopt).
  channel_async_op(std::shared_ptr<channel_state<T>> state, Handler handler, std::optional<T> value)
      : state_(std::move(state)),
        handler_(std::move(handler)),
        work_(asio::prefer(asio::get_associated_executor(handler_, asio::system_executor()),
                           asio::execution::outstanding_work.tracked)),
        storage_(std::move(value)) {
    if constexpr (std::is_same_v<Waiter, send_waiter<T>>) {
      this->value = &*storage_;
    } else {
      this->slot = &storage_;
    }
  }

  template <class Operation>
  void start(Operation operation) {
    slot_ = asio::get_associated_cancellation_slot(handler_);
    if (slot_.is_connected()) slot_.template emplace<channel_cancellation<T>>(state_, this);
    if (operation(*state_)) wake(nullptr);
  }

  void wake(task_context*) noexcept override {
    asio::dispatch(work_, [this] { complete(); });
  }

 private:
  void complete() {
    if (slot_.is_connected()) slot_.clear();
    auto handler = std::move(handler_);
    auto error = this->error;
    std::optional<T> value = std::move(storage_);
    delete this;
    if constexpr (std::is_same_v<Waiter, send_waiter<T>>) {
      std::move(handler)(error);
    } else {
      std::move(handler)(error, value ? std::move(*value) : T{});
    }
  }

  std::shared_ptr<channel_state<T>> state_;
  Handler handler_;
  std::decay_t<decltype(asio::prefer(std::declval<asio::associated_executor_t<Handler, asio::system_executor>>(),
                                     asio::execution::outstanding_work.tracked))>
      work_;
  std::optional<T> storage_;
  asio::cancellation_slot slot_;
};

}  // namespace coral::detail
