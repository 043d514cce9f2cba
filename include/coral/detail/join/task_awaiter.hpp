#pragma once

#include <coroutine>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/config.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/core/promise_base.hpp"
#include "coral/detail/core/task_result.hpp"
#include "coral/detail/join/child_task.hpp"

namespace coral::detail {

// Awaits a child task that runs on the awaiting task's executor: the child starts on the spot,
// on this thread, and when it completes without suspending the parent simply continues.
template <class T>
class task_awaiter {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::child_task; }
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
    task_segment& segment = parent.promise().segment();
    segment.throw_if_cancelled();
    child_.promise().run_inline(segment, parent);
    child_.promise().set_result_storage(result_);
    if (!start_inline(child_)) return true;
    child_ = nullptr;  // it completed, and its frame is gone
    return false;
  }

  user_value_t<T> await_resume() { return hand_to_caller(result_); }
  // (See child_segment_awaiter::finish_held.)
  T await_resume_held() { return result_.take_or_rethrow(); }

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
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::child_task; }
  using handle_type = std::coroutine_handle<task_promise<T>>;

  task_on_awaiter(handle_type child, asio::any_io_executor executor, bool shielded = false) noexcept
      : same_executor_(child), executor_(std::move(executor)), shielded_(shielded) {}

  bool await_ready() const { return same_executor_.await_ready(); }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> parent) {
    const auto& parent_executor = parent.promise().segment().executor();
    if (!shielded_ && (!executor_ || executor_ == parent_executor)) return same_executor_.await_suspend(parent);
    on_segment_ = true;
    segment_.start(same_executor_.release_child(), parent, executor_ ? executor_ : parent_executor, !shielded_);
    return true;
  }

  user_value_t<T> await_resume() { return on_segment_ ? segment_.finish() : same_executor_.await_resume(); }

  // As a join's argument (`when_all(on(ex, m.lock() && work()), other())`): a result that holds
  // something for the task stays with the join's result (see held_for_task).
  using coral_join_result = std::conditional_t<held_for_task<T>, T, user_value_t<T>>;
  coral_join_result coral_join_resume() {
    if constexpr (held_for_task<T>) {
      return on_segment_ ? segment_.finish_held() : same_executor_.await_resume_held();
    } else {
      return await_resume();
    }
  }

 private:
  struct same_executor_part : task_awaiter<T> {
    using task_awaiter<T>::task_awaiter;
    handle_type release_child() noexcept { return std::exchange(this->child_, nullptr); }
  };
  same_executor_part same_executor_;
  child_segment_awaiter<T> segment_;
  asio::any_io_executor executor_;
  bool shielded_;
  bool on_segment_ = false;
};

// The executor a task type is bound to, or none for a task that runs where it is started (an
// `inherit` task: its executor type is not an executor).
template <class Task>
std::optional<asio::any_io_executor> bound_executor() {
  if constexpr (executor_like<typename Task::executor_type>) {
    return erase_executor(typename Task::executor_type{});
  } else {
    return std::nullopt;
  }
}

template <class Task>
auto make_task_awaiter(Task&& t) {
  using T = typename Task::value_type;
  if constexpr (executor_like<typename Task::executor_type>) {
    // (The executor first: making it may throw, and then the task must still own its frame.)
    auto executor = erase_executor(typename Task::executor_type{});
    return task_on_awaiter<T>(t.release(), std::move(executor));
  } else {
    return task_awaiter<T>(t.release());
  }
}

}  // namespace coral::detail
