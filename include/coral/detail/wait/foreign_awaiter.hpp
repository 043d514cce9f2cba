#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

// A tiny coroutine handed to a foreign awaitable in place of the task's own handle. Whatever thread
// the foreign awaitable resumes it on, it passes the task back to the task's executor, and it
// keeps the task's segment alive while the foreign awaitable holds it.
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

// Marks a foreign await_suspend in progress on this thread. A hop resumed while its mark is the
// innermost one was resumed synchronously (an awaitable that completes at once): it records that
// instead of resuming the task, and the task continues without suspending — no recursion, however
// many such awaits follow each other.
struct foreign_mark {
  void* hop;
  bool completed = false;
};
inline constinit thread_local foreign_mark* tls_foreign_mark = nullptr;

struct own_address {
  void* address = nullptr;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> self) noexcept {
    address = self.address();
    return false;
  }
  void* await_resume() const noexcept { return address; }
};

inline executor_return return_to_executor(suspended_task task) {
  void* self = co_await own_address{};
  if (foreign_mark* mark = tls_foreign_mark; mark && mark->hop == self) {
    mark->completed = true;
    co_return;
  }
  task.resume_later();
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
// executor if the awaitable resumes it elsewhere. It cannot be interrupted, so cancellation is
// checked before it starts and after it completes (its result is then discarded).
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

  // Always goes through await_suspend, which checks cancellation first (even an awaitable that is
  // ready at once fails in a cancelled task).
  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> task) {
    segment_ = &task.promise().segment();
    segment_->throw_if_cancelled();
    if (awaiter().await_ready()) return false;
    suspended_task suspended;
    suspended.suspend(task);
    auto hop = return_to_executor(std::move(suspended)).handle;
    foreign_mark mark{hop.address()};
    struct mark_scope {
      foreign_mark* outer;
      ~mark_scope() { tls_foreign_mark = outer; }
    } scope{std::exchange(tls_foreign_mark, &mark)};
    using result = decltype(awaiter().await_suspend(hop));
    try {
      if constexpr (std::is_void_v<result>) {
        awaiter().await_suspend(hop);
      } else if constexpr (std::is_same_v<result, bool>) {
        if (!awaiter().await_suspend(hop)) {
          hop.destroy();
          return false;
        }
      } else {
        std::coroutine_handle<> next = awaiter().await_suspend(hop);
        if (next == hop) {
          hop.destroy();
          return false;
        }
        next.resume();
      }
    } catch (...) {
      if (!mark.completed) hop.destroy();
      throw;
    }
    return !mark.completed;
  }

  decltype(auto) await_resume() {
    if (segment_) segment_->throw_if_cancelled();
    return awaiter().await_resume();
  }

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
  task_segment* segment_ = nullptr;
};

}  // namespace coral::detail
