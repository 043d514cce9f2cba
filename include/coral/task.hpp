#pragma once

#include <concepts>
#include <coroutine>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/detail/core/config.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/core/promise_base.hpp"
#include "coral/detail/core/spawn_operation.hpp"
#include "coral/detail/core/unique_coroutine.hpp"

namespace coral {

// The executor type of a task that runs on whatever executor awaits or spawns it.
// Thread safety: distinct objects: safe. Shared objects: safe (an empty tag).
struct inherit {};

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
class [[nodiscard]] CORAL_CORO_RETURN_TYPE task {
  static_assert(std::is_same_v<Executor, inherit> || detail::executor_like<Executor>,
                "coral::task<T, Executor>: Executor is coral::inherit or a default-constructible executor type");

 public:
  using promise_type = detail::task_promise<T>;
  using value_type = T;
  using executor_type = Executor;
  using handle_type = std::coroutine_handle<promise_type>;

  task() noexcept = default;
  task(task&&) noexcept = default;
  task& operator=(task&&) noexcept = default;

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
  // token's cancellation slot cancels the task.
  template <class CompletionToken>
  requires boost::asio::completion_token_for<CompletionToken, detail::spawn_signature_t<T>>
  auto operator()(CompletionToken&& token) &&;

  // Gives up ownership of the coroutine frame (for the runtime).
  handle_type release() noexcept { return frame_.release(); }

  // The same coroutine with another executor binding.
  template <class OtherExecutor>
  explicit task(task<T, OtherExecutor>&& other) noexcept : frame_(other.release()) {}

  // Takes ownership of a frame (what a coroutine returning task<> is built from).
  task(handle_type frame) noexcept : frame_(frame) {}

 private:
  // A task only ever owns a frame that has not started or that has finished: running frames are
  // owned by the awaiting coroutine's awaiter or by the spawned chain's root.
  detail::unique_coroutine<promise_type> frame_;
};

template <class T, class Executor>
template <class CompletionToken>
requires boost::asio::completion_token_for<CompletionToken, detail::spawn_signature_t<T>>
auto task<T, Executor>::operator()(CompletionToken&& token) && {
  return boost::asio::async_initiate<CompletionToken, detail::spawn_signature_t<T>>(
      [](auto handler, task t) {
        // Boost 1.81 cannot resume an asio::awaitable from an operation whose signature is
        // void(std::exception_ptr, T): awaitable_async_op_handler<R(std::exception_ptr, T)>::resume
        // dereferences its result struct (boost/asio/impl/awaitable.hpp:956) and does not compile.
        static_assert(std::is_void_v<T> || !detail::is_awaitable_op_handler_v<decltype(handler)>,
                      "coral: with Boost 1.81, an asio::awaitable awaits a task<T> that returns a value through "
                      "coral::to_awaitable: `T v = co_await coral::to_awaitable(coral_task());` (task<void> needs "
                      "no wrapper)");
        auto executor = boost::asio::get_associated_executor(handler);
        detail::initiate_spawn{}(std::move(handler), detail::erase_executor(executor), std::move(t),
                                 detail::code_location{});
      },
      token, std::move(*this));
}

}  // namespace coral

#include "coral/impl/await_transform.hpp"
