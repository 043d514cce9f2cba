#pragma once

#include <chrono>
#include <concepts>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/frame_allocator.hpp"
#include "coral/detail/core/task_result.hpp"
#include "coral/detail/core/task_segment.hpp"
#include "coral/detail/tracking/task_record.hpp"

namespace coral {

template <class T, class Executor>
class task;

namespace detail {

template <class T>
inline constexpr bool is_task_v = false;
template <class T, class E>
inline constexpr bool is_task_v<task<T, E>> = true;

template <class T>
inline constexpr bool is_asio_awaitable_v = false;
template <class T, class E>
inline constexpr bool is_asio_awaitable_v<asio::awaitable<T, E>> = true;

template <class T>
inline constexpr bool is_duration_v = false;
template <class Rep, class Period>
inline constexpr bool is_duration_v<std::chrono::duration<Rep, Period>> = true;

// Refers to a coral awaitable for the duration of a co_await. g++ 12 copies (or moves) whatever
// await_transform returns, even a reference, so coral awaitables, which may not be copyable and
// must be awaited in place (awaiter<R>), are passed through this handle.
template <class A>
struct awaiter_ref {
  A& awaitable;
  decltype(auto) await_ready() { return awaitable.await_ready(); }
  template <class Promise>
  decltype(auto) await_suspend(std::coroutine_handle<Promise> coroutine) {
    return awaitable.await_suspend(coroutine);
  }
  decltype(auto) await_resume() { return awaitable.await_resume(); }
};

// Marks a child coroutine being started synchronously by its awaiter on this thread. If the child
// reaches its final suspension point while its mark is the innermost one on this thread, it
// completed without suspending: it records that and runs to its end (freeing its frame) instead
// of suspending, and the awaiter continues the parent without suspending it. This keeps the stack flat however long a
// chain of synchronous children is, without relying on symmetric transfer being a tail call (g++ does not make it one
// at -O0 or under sanitizers).
struct inline_start {
  const void* child;  // the child's promise
  bool completed = false;
};
inline constinit thread_local inline_start* tls_inline_start = nullptr;

// Starts `child` on this thread; returns true if it completed without suspending, in which case
// its frame is gone already (it does not stop at its final suspension point).
template <class Promise>
bool start_inline(std::coroutine_handle<Promise> child) {
  inline_start mark{&child.promise()};
  inline_start* outer = std::exchange(tls_inline_start, &mark);
  child.resume();
  tls_inline_start = outer;
  return mark.completed;
}

template <class D>
inline constexpr bool is_reset_cancellation_v = std::is_same_v<D, asio::this_coro::reset_cancellation_state_0_t>;
template <class F>
inline constexpr bool is_reset_cancellation_v<asio::this_coro::reset_cancellation_state_1_t<F>> = true;
template <class F, class G>
inline constexpr bool is_reset_cancellation_v<asio::this_coro::reset_cancellation_state_2_t<F, G>> = true;

template <class D>
inline constexpr bool is_this_coro_cancellation_v =
    std::is_same_v<D, asio::this_coro::cancellation_state_t> ||
    std::is_same_v<D, asio::this_coro::throw_if_cancelled_0_t> ||
    std::is_same_v<D, asio::this_coro::throw_if_cancelled_1_t> || is_reset_cancellation_v<D>;

// A value available at once (co_await does not suspend).
template <class T>
struct ready_value {
  T value;
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  T await_resume() { return std::move(value); }
};
template <>
struct ready_value<void> {
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  void await_resume() const noexcept {}
};

// What `co_await asio::this_coro::cancellation_state` gives in a task: whether it is cancelled.
class task_cancellation_state {
 public:
  explicit task_cancellation_state(const task_segment* segment) noexcept : segment_(segment) {}
  // asio::cancellation_type::terminal once the task is cancelled (coral does not tell the types
  // apart after the fact), else none.
  asio::cancellation_type cancelled() const noexcept {
    return segment_->cancelled() ? asio::cancellation_type::terminal : asio::cancellation_type::none;
  }

 private:
  const task_segment* segment_;
};

class promise_base {
 public:
  static void* operator new(std::size_t size) { return allocate_frame(size); }
  static void operator delete(void* p, std::size_t size) noexcept { deallocate_frame(p, size); }

  std::suspend_always initial_suspend() noexcept { return {}; }

  // The final suspension hands control back. A child that completes while its awaiter is still
  // starting it (see start_inline) does not suspend at all: its frame is freed on the spot and
  // control returns to the awaiter, which finds the result in its own storage. Otherwise the
  // continuation is resumed with a plain call rather than symmetric transfer: the call depth this
  // adds is bounded by how deeply tasks are nested.
  struct final_awaiter {
    promise_base* self;
    bool await_ready() const noexcept {
      if (inline_start* mark = tls_inline_start; mark && mark->child == self) {
        mark->completed = true;
        return true;
      }
      return false;
    }
    void await_suspend(std::coroutine_handle<>) const noexcept {
      promise_base& p = *self;
      if (p.root_) {
#if CORAL_TASK_TRACKING
        if (task_record* record = p.root_->record()) [[unlikely]] {
          record_suspend(*record);  // its last run counts too
          // An exception rethrown to one of its coroutines, caught there, ends its trace here.
          if (rethrown_failure_note) forget_caught_failure();
        }
#endif
        p.root_->complete();  // destroys this frame
      } else {
        p.continuation_.resume();
      }
    }
    void await_resume() const noexcept {}
  };
  final_awaiter final_suspend() noexcept {
    return {this};
  }

  // What a task can co_await, and the awaiter each becomes. Defined with the public types it
  // dispatches on (coral/impl/await_transform.hpp), which the headers of coroutine types include.
  // `where`: the co_await's place in the source, for the task's record (coral::dump_tasks).
  template <class A>
  decltype(auto) await_transform(A&& awaitable, code_location where = code_location::here());

  task_segment& segment() const noexcept {
    return *segment_;
  }
  // Who resumes when this coroutine hands control back (set by run_inline).
  std::coroutine_handle<> continuation() const noexcept {
    return continuation_;
  }

  // Wiring, set by whoever starts the coroutine.
  template <class Promise>
  void run_inline(task_segment& segment, std::coroutine_handle<Promise> continuation) noexcept {
    segment_ = &segment;
    continuation_ = continuation;
#if CORAL_TASK_TRACKING
    // (Only a tracked task's record needs it.)
    // (Saturated: a deeper coroutine is recorded as the deepest, never as the outermost.)
    if (segment.record()) [[unlikely]] {
      const std::uint16_t parent = static_cast<promise_base&>(continuation.promise()).depth_;
      depth_ = parent == UINT16_MAX ? parent : static_cast<std::uint16_t>(parent + 1);
    }
#endif
  }
  void run_as_root(task_segment& root) noexcept {
    segment_ = &root;
    root_ = &root;
  }

 private:
  // Records the co_await at `where` in the task's record, if it has one: `wait()` gives what it
  // waits on, as {wait_kind, detail}.
  template <class Wait>
  void note_await(const code_location& where, Wait&& wait) noexcept {
#if CORAL_TASK_TRACKING
    if (task_record* record = segment_->record()) [[unlikely]] {
      if (rethrown_failure_note) [[unlikely]]
        forget_caught_failure();
      const auto [kind, detail] = wait();
      record_await(*record, depth_, where, kind, detail);
    }
#else
    static_cast<void>(where), static_cast<void>(wait);
#endif
  }

 protected:
  // In unhandled_exception(): the exception's trace, kept with it in `result` (tracked tasks).
  template <class T>
  void note_failure(task_result<T>& result) noexcept {
#if CORAL_TASK_TRACKING
    if (task_record* record = segment_->record()) [[unlikely]] {
      result.set_failure_note(record_failure(*record, depth_));
    } else if (rethrown_failure_note) [[unlikely]] {
      forget_caught_failure();  // (kept when it is this exception, passing through)
    }
#else
    static_cast<void>(result);
#endif
  }

 private:
  // asio::this_coro's cancellation helpers, with coral's level-triggered model: a cancelled task
  // stays cancelled and every suspension point throws operation_aborted (see cancellation.md).
  template <class D>
  auto this_coro_cancellation(const D& request) {
    namespace this_coro = asio::this_coro;
    if constexpr (std::is_same_v<D, this_coro::cancellation_state_t>) {
      return ready_value<task_cancellation_state>{task_cancellation_state(segment_)};
    } else if constexpr (std::is_same_v<D, this_coro::throw_if_cancelled_0_t>) {
      return ready_value<bool>{true};
    } else if constexpr (std::is_same_v<D, this_coro::throw_if_cancelled_1_t>) {
      if (!request.value) {
        throw std::logic_error(
            "coral: a task always throws operation_aborted at its suspension points once cancelled "
            "(this_coro::throw_if_cancelled(false) cannot be honoured); run what must not be interrupted in "
            "coral::non_cancellable(...)");
      }
      return ready_value<void>{};
    } else {
      // reset_cancellation_state(...): coral tasks take every cancellation type and have no
      // filters to set; the reset does not un-cancel a cancelled task.
      return ready_value<void>{};
    }
  }

  struct executor_awaiter {
    const asio::any_io_executor& executor;
    bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    asio::any_io_executor await_resume() const { return executor; }
  };

  task_segment* segment_ = nullptr;
  std::coroutine_handle<> continuation_;
  // Set on the outermost coroutine of a segment (a spawned task, a child on another executor).
  task_segment* root_ = nullptr;
#if CORAL_TASK_TRACKING
  // How many coroutines of the segment await this one (0: the outermost).
  std::uint16_t depth_ = 0;
#endif
};

// What a coral awaitable waits on, for the task's record: {kind, detail} (the detail is the
// address of the object waited on, or a sleep's deadline).
template <class D>
std::pair<wait_kind, std::int64_t> wait_of(const D& awaitable) noexcept {
  wait_kind kind = wait_kind::none;
  std::int64_t detail = 0;
  if constexpr (requires { awaitable.coral_wait_kind(); }) kind = awaitable.coral_wait_kind();
  if constexpr (requires { awaitable.coral_wait_detail(); }) detail = awaitable.coral_wait_detail();
  return {kind, detail};
}

// `co_return no_result;` ends a task<T> with no result at all: a race branch that lost ends so,
// since the join never reads a loser's result, and no T is made for it (T need not be
// default-constructible). Only the joins use it; awaiting such a task directly is an error.
struct no_result_t {
  explicit no_result_t() = default;
};
inline constexpr no_result_t no_result{};

// `co_return result_writer{f};` ends a task<T> with f(result) writing its outcome straight into the
// storage of whoever awaits it: a join's branch or a task built on a join passes a loaned value on
// (see loan) or moves a value once, instead of building a T to return. Only the joins use it.
template <class F>
struct result_writer {
  F write;
};
template <class F>
result_writer(F) -> result_writer<F>;

template <class T>
class task_promise : public promise_base {
 public:
  std::coroutine_handle<task_promise> get_return_object() noexcept {
    return std::coroutine_handle<task_promise>::from_promise(*this);
  }
  void unhandled_exception() noexcept {
    result_->set_exception(std::current_exception());
    note_failure(*result_);
  }

  template <class U = T>
  requires std::convertible_to<U&&, T>
  void return_value(U&& value) { result_->set_value(std::forward<U>(value)); }
  void return_value(no_result_t) noexcept {}
  template <class F>
  void return_value(result_writer<F>&& writer) {
    writer.write(*result_);
  }

  // Where the outcome goes: storage of whoever awaits or spawned the task, which outlives the
  // frame. Set before the task starts.
  void set_result_storage(task_result<T>& storage) noexcept { result_ = &storage; }

 private:
  task_result<T>* result_ = nullptr;
};

template <>
class task_promise<void> : public promise_base {
 public:
  std::coroutine_handle<task_promise> get_return_object() noexcept {
    return std::coroutine_handle<task_promise>::from_promise(*this);
  }
  void unhandled_exception() noexcept {
    result_->set_exception(std::current_exception());
    note_failure(*result_);
  }
  void return_void() noexcept { result_->set_value(); }
  void set_result_storage(task_result<void>& storage) noexcept { result_ = &storage; }

 private:
  task_result<void>* result_ = nullptr;
};

}  // namespace detail
}  // namespace coral
