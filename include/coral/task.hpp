#pragma once

#include <concepts>
#include <coroutine>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/detail/child_task.hpp"
#include "coral/detail/config.hpp"
#include "coral/detail/executors.hpp"
#include "coral/detail/promise.hpp"

namespace coral {

namespace detail {

// The completion signature of a task as an asynchronous operation (spawn with a token).
template <class T>
struct spawn_signature {
  using type = void(std::exception_ptr, T);
};
template <>
struct spawn_signature<void> {
  using type = void(std::exception_ptr);
};
template <class T>
using spawn_signature_t = typename spawn_signature<T>::type;

}  // namespace detail

// A lazy, move-only coroutine. Nothing runs until the task is awaited (`co_await t`) inside
// another task or started with spawn()/sync_wait(). Its result, or its exception, goes to whoever
// awaits or joins it. T may be a value, a move-only type, a reference or void.
//
// Executor says where the task runs:
//  - inherit (the default): on the executor of whoever awaits or spawns it. Awaiting such a
//    child starts it immediately on the awaiting thread, with no queue hop.
//  - a default-constructible executor type (loop_executor, pool_executor, ...): the task always
//    starts on Executor{}; the awaiting coroutine resumes on its own executor afterwards.
//
// Every suspension of a task resumes it on its executor.
//
// Thread safety: distinct objects: safe. Shared objects: unsafe (a task is owned by one awaiter).
template <class T = void, class Executor = inherit>
class [[nodiscard]] task {
 public:
  using promise_type = detail::task_promise<T>;
  using value_type = T;
  using executor_type = Executor;
  using handle_type = std::coroutine_handle<promise_type>;

  task() noexcept = default;
  task(task&& other) noexcept : frame_(std::exchange(other.frame_, nullptr)) {}
  task& operator=(task&& other) noexcept {
    if (this != &other) {
      reset();
      frame_ = std::exchange(other.frame_, nullptr);
    }
    return *this;
  }
  ~task() { reset(); }

  // False once the task has been moved from (awaited, spawned or moved elsewhere).
  bool valid() const noexcept { return static_cast<bool>(frame_); }
  // A task is not a truth value: `if (a() || b())` or `bool r = a() && b();` would run neither.
  template <class B>
  requires std::same_as<B, bool>
  operator B() const noexcept {
    static_assert(!std::is_same_v<B, B>,
                  "coral::task is not a truth value: `a() || b()` and `a() && b()` are tasks that run a() and b() "
                  "together (co_await them); valid() says whether a task holds a coroutine");
    return false;
  }

  // An asynchronous operation to Asio: `co_await coral_task()` inside an asio::awaitable (or
  // `std::move(t)(token)` with any completion token) spawns the task on the token's associated
  // executor, with signature void(std::exception_ptr, T) (void(std::exception_ptr) for void); the
  // token's cancellation slot cancels the task. Defined in spawn.hpp.
  template <class CompletionToken>
  requires boost::asio::completion_token_for<CompletionToken, detail::spawn_signature_t<T>>
  auto operator()(CompletionToken&& token) &&;

  // Gives up ownership of the coroutine frame (for the runtime).
  handle_type release() noexcept { return std::exchange(frame_, nullptr); }

  // The same coroutine with another executor binding.
  template <class OtherExecutor>
  explicit task(task<T, OtherExecutor>&& other) noexcept : frame_(other.release()) {}

  // Takes ownership of a frame (what a coroutine returning task<> is built from).
  task(handle_type frame) noexcept : frame_(frame) {}

 private:
  // A task only ever owns a frame that has not started or that has finished: running frames are
  // owned by the awaiting coroutine's awaiter or by the spawned chain's root.
  void reset() noexcept {
    if (auto f = std::exchange(frame_, nullptr)) f.destroy();
  }

  handle_type frame_;
};

namespace detail {

// Awaits a child task that runs on the awaiting task's executor: the child starts on the spot,
// on this thread, and when it completes without suspending the parent simply continues.
template <class T>
class task_awaiter {
 public:
  using coral_awaitable = void;
  using handle_type = std::coroutine_handle<task_promise<T>>;

  explicit task_awaiter(handle_type child) noexcept : child_(child) {}
  task_awaiter(task_awaiter&& other) noexcept : child_(std::exchange(other.child_, nullptr)) {}
  task_awaiter& operator=(task_awaiter&&) = delete;
  // Runs once per awaited child; g++ sometimes declines to inline it on its own.
  CORAL_ALWAYS_INLINE ~task_awaiter() {
    if (child_) child_.destroy();
  }

  bool await_ready() const {
    if (!child_) {
      throw std::logic_error("coral: awaiting a task that is empty (moved from, or already awaited or spawned)");
    }
    return false;
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> parent) {
    task_context& context = parent.promise().context();
    context.throw_if_cancelled();
    child_.promise().run_inline(context, parent);
    child_.promise().set_result_storage(result_);
    if (!start_inline(child_)) return true;
    child_ = nullptr;  // it completed, and its frame is gone
    return false;
  }

  T await_resume() { return result_.take(); }

 protected:
  handle_type child_;
  task_result<T> result_;
};

// Awaits a child task that runs on a given executor: on that executor as a segment of its own
// (the parent resumes on its own executor afterwards), or inline when it is the parent's
// executor. With `shielded`, it always runs as a segment of its own that the parent's
// cancellation does not reach (non_cancellable()).
template <class T>
class task_on_awaiter {
 public:
  using coral_awaitable = void;
  using handle_type = std::coroutine_handle<task_promise<T>>;

  task_on_awaiter(handle_type child, asio::any_io_executor executor, bool shielded = false) noexcept
      : inline_(child), executor_(std::move(executor)), shielded_(shielded) {}

  bool await_ready() const { return inline_.await_ready(); }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> parent) {
    const auto& parent_executor = parent.promise().context().executor();
    if (!shielded_ && (!executor_ || executor_ == parent_executor)) return inline_.await_suspend(parent);
    on_segment_ = true;
    segment_.start(inline_.release_child(), parent, executor_ ? executor_ : parent_executor, !shielded_);
    return true;
  }

  T await_resume() { return on_segment_ ? segment_.finish() : inline_.await_resume(); }

 private:
  struct inline_part : task_awaiter<T> {
    using task_awaiter<T>::task_awaiter;
    handle_type release_child() noexcept { return std::exchange(this->child_, nullptr); }
  };
  inline_part inline_;
  child_segment_awaiter<T> segment_;
  asio::any_io_executor executor_;
  bool shielded_;
  bool on_segment_ = false;
};

// The executor a task type is bound to, or none for a task that runs where it is started (a
// spawned task, a child of when_all / when_any).
template <class Task>
std::optional<asio::any_io_executor> bound_executor() {
  if constexpr (std::is_same_v<typename Task::executor_type, inherit>) {
    return std::nullopt;
  } else {
    return erase_executor(typename Task::executor_type{});
  }
}

template <class T, class Executor>
auto make_task_awaiter(task<T, Executor>&& t) {
  if constexpr (std::is_same_v<Executor, inherit>) {
    return task_awaiter<T>(t.release());
  } else {
    return task_on_awaiter<T>(t.release(), erase_executor(Executor{}));
  }
}

}  // namespace detail
}  // namespace coral
