#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/detail/core/result_segment.hpp"
#include "coral/detail/wait/deadline.hpp"

namespace coral {

// A handle to a spawned task (the articles' Task as seen from outside). Copies refer to the same
// task. Dropping every job neither cancels nor leaks the task: it runs to its end.
//
// then/catching/finally register a callback that runs once the task has ended: immediately, on
// the calling thread, if it already has; otherwise on the task's executor, on the thread that ends
// it. Callbacks run in the order they were registered, never under a lock. When a job reports
// done (done(), wait(), get_result(), callbacks), nothing of its task touches any execution
// context any more: the context may be destroyed right away.
//
// Thread safety: distinct objects: safe. Shared objects: safe (a job may be used from any thread).
template <class T = void>
class job {
  using state_type = detail::result_segment<T>;

 public:
  using value_type = T;

  job() noexcept = default;
  explicit job(state_type* state) noexcept : state_(detail::adopt_as_handle(state)) {}  // adopts a reference
  job(const job& other) noexcept : state_(other.state_.get()) {}
  job(job&& other) noexcept = default;
  job& operator=(job other) noexcept {
    std::swap(state_, other.state_);
    return *this;
  }
  // The last job to go once the task has ended destroys its result, here.
  ~job() = default;

  bool valid() const noexcept { return state_ != nullptr; }

  // f(value) when the task returns (f() for job<void>); not called when it fails.
  template <class F>
  job& then(F f) {
    check_valid("then");
    state().when_done([f = std::move(f)](state_type& s) mutable {
      if (!s.result().has_value()) return;
      if constexpr (std::is_void_v<T>) {
        f();
      } else {
        f(s.result().peek());
      }
    });
    return *this;
  }

  // f(e) when the task fails, with e a std::exception& (as in the articles: called only for
  // exceptions derived from std::exception) or a std::exception_ptr (called for any exception).
  template <class F>
  job& catching(F f) {
    check_valid("catching");
    state().when_done([f = std::move(f)](state_type& s) mutable {
      if (!s.result().has_exception()) return;
      if constexpr (std::is_invocable_v<F&, std::exception_ptr>) {
        s.mark_observed();
        f(s.result().exception());
      } else {
        static_assert(std::is_invocable_v<F&, std::exception&>,
                      "coral::job::catching: the callback must take std::exception& or std::exception_ptr");
        try {
          std::rethrow_exception(s.result().exception());
        } catch (std::exception& e) {
          s.mark_observed();
          f(e);
        } catch (...) {
          // Not a std::exception: this callback cannot see it; it stays unobserved (reported).
        }
      }
    });
    return *this;
  }

  // f() once the task has ended, whichever way.
  template <class F>
  job& finally(F f) {
    check_valid("finally");
    state().when_done([f = std::move(f)](state_type&) mutable { f(); });
    return *this;
  }

  bool done() const noexcept { return state_ && state_->done(); }

  // Blocks the calling thread until the task has ended. Throws std::logic_error instead of
  // deadlocking when called on a thread of the task's own executor, or inside the strand it runs
  // on (an inline task waiting for a task it spawned on its own executor).
  // A wait that returned holds nothing: however many times a job is waited for, it keeps one
  // signal for its waiters.
  void wait() const {
    check_waitable("wait");
    state().wait_until(static_cast<const std::chrono::steady_clock::time_point*>(nullptr));
  }

  // As wait(), for at most `timeout`; returns done().
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    check_waitable("wait_for");
    const auto deadline = detail::deadline_after(detail::clock_duration(timeout));
    return state().wait_until(&deadline);
  }

  // Waits for the task and returns its value or rethrows its exception. A copyable value is
  // copied (get_result() may be called again); a move-only one is moved out, once.
  T get_result() {
    wait();
    auto& result = state().result();
    state().mark_observed();
    if constexpr (std::is_void_v<T> || std::is_reference_v<T>) {
      return result.take();
    } else if constexpr (std::is_copy_constructible_v<T>) {
      result.rethrow_if_exception();
      return result.peek();
    } else {
      result.rethrow_if_exception();
      if (!state().claim_result()) {
        throw std::logic_error("coral::job::get_result: the move-only result was already taken");
      }
      return result.take();
    }
  }

  // Asks the task to stop: the operation it is suspended on, and every later one, fails with
  // operation_aborted (cancellation is level-triggered; see docs/cancellation.md). It reaches the
  // innermost running child, whatever executor it runs on. Callable from any thread; does nothing
  // once the task has ended. A task that then ends with operation_aborted did what was asked: it
  // is not reported as an unobserved failure (any other exception still is).
  void cancel() {
    check_valid("cancel");
    if (!state().done()) state().cancel_on_request();
  }

 private:
  void check_valid(const char* what) const {
    if (!state_) throw std::logic_error(std::string("coral::job::") + what + " on an empty job");
  }

  void check_waitable(const char* what) const {
    check_valid(what);
    if (!state_->done() && (state_->gate().runs_in_this_thread() || state_->strand_runs_in_this_thread())) {
      throw std::logic_error(std::string("coral::job::") + what +
                             " called on a thread of the job's own executor while the job is still running: "
                             "blocking here would deadlock, since the job can only finish on this executor. "
                             "co_await the task or use then()/finally() instead");
    }
  }

  state_type& state() const noexcept { return *state_; }

  detail::counted_ref<state_type, detail::job_handle_references> state_;
};

}  // namespace coral
