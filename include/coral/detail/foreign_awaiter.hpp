#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/task_root.hpp"

namespace coral::detail {

// A tiny coroutine handed to a foreign awaitable in place of the task's own handle. Whatever thread
// the foreign awaitable resumes it on, it passes the task back to the task's executor. It also
// keeps the task's chain alive while the foreign awaitable holds it.
class executor_return {
 public:
  struct promise_type {
    executor_return get_return_object() noexcept {
      return executor_return{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

inline executor_return return_to_executor(asio::any_io_executor executor, keep_alive keep,
                                          std::coroutine_handle<> task) {
  asio::dispatch(executor, resume_handler{task, std::move(keep)});
  co_return;
}

template <class A>
decltype(auto) get_awaiter(A&& awaitable) {
  if constexpr (requires { std::forward<A>(awaitable).operator co_await(); }) {
    return std::forward<A>(awaitable).operator co_await();
  } else if constexpr (requires { operator co_await(std::forward<A>(awaitable)); }) {
    return operator co_await(std::forward<A>(awaitable));
  } else {
    return std::forward<A>(awaitable);
  }
}

// Awaits an awaitable that knows nothing about executors, and brings the task back to its own
// executor if the awaitable resumes it elsewhere.
template <class A>
class foreign_awaiter {
  using awaitable_type = std::conditional_t<std::is_lvalue_reference_v<A>, A, std::remove_cvref_t<A>>;
  using made_awaiter = decltype(get_awaiter(std::declval<awaitable_type&>()));
  // The awaitable is its own awaiter unless its operator co_await makes one. No member refers to
  // another: g++ 12 may copy this object before awaiting it.
  static constexpr bool is_own_awaiter = std::is_reference_v<made_awaiter>;
  struct none {};

 public:
  explicit foreign_awaiter(A&& awaitable) : awaitable_(std::forward<A>(awaitable)) {}

  bool await_ready() { return awaiter().await_ready(); }

  template <class Promise>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> task) {
    task_context& context = task.promise().context();
    auto hop = return_to_executor(context.executor, keep_alive(context.root), task).handle;
    using result = decltype(awaiter().await_suspend(hop));
    if constexpr (std::is_void_v<result>) {
      awaiter().await_suspend(hop);
      return std::noop_coroutine();
    } else if constexpr (std::is_same_v<result, bool>) {
      if (awaiter().await_suspend(hop)) return std::noop_coroutine();
      hop.destroy();
      return task;
    } else {
      return awaiter().await_suspend(hop);
    }
  }

  decltype(auto) await_resume() { return awaiter().await_resume(); }

 private:
  auto& awaiter() {
    if constexpr (is_own_awaiter) {
      return static_cast<std::remove_reference_t<awaitable_type>&>(awaitable_);
    } else {
      if (!made_) made_.emplace(get_awaiter(static_cast<std::remove_reference_t<awaitable_type>&>(awaitable_)));
      return *made_;
    }
  }

  awaitable_type awaitable_;
  std::conditional_t<is_own_awaiter, none, std::optional<std::remove_cvref_t<made_awaiter>>> made_;
};

}  // namespace coral::detail
