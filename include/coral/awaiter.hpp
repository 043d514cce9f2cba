#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/core/context_gate.hpp"
#include "coral/detail/wait/suspended_task.hpp"
#include "coral/detail/wait/wait_link.hpp"

namespace coral {

// The articles' generic awaiter. Derive from awaiter<R>, start something in after_suspend() and
// call resume(value) / resume_exception(e) (resume() for awaiter<void>) exactly once, from any
// thread, when it is done. coral installs the task's executor: the task always continues there,
// never inside the resume() call. before_resume() runs on the task's executor just before the
// value is handed to the task.
//
// What coral starts here cannot be interrupted by coral, so cancellation is checked before
// after_suspend() and after the task resumes: a cancelled task's await fails with
// operation_aborted (the value is discarded). A resume() that comes before the await (the work
// was started earlier) is kept: the await then takes the value at once, without after_suspend().
// A resume() on an awaiter whose await failed, or never came, keeps the value in the awaiter,
// where it is destroyed. If the task's execution context shuts down while it waits, the task's
// frames are destroyed with the context; a later resume() on an awaiter that lives outside the
// task does nothing (one that lived in the task's frame is gone with it: the operation must not
// resume it then, as an Asio operation must not call a destroyed handler).
//
// Thread safety: distinct objects: safe. Shared objects: unsafe, except resume(), which may be
// called once from any thread.
//
//   struct read_line : coral::awaiter<std::string> {
//     void after_suspend() override { start_reading([this](std::string s) { resume(std::move(s)); }); }
//   };
//   std::string line = co_await read_line{};
template <class R>
class awaiter : private detail::external_wait {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::awaiter; }

  awaiter() = default;
  awaiter(const awaiter&) = delete;
  awaiter& operator=(const awaiter&) = delete;
  virtual ~awaiter() = default;

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    task_.suspend(coroutine);
    gate_ = task_.segment().shared_gate();
    task_.segment().set_external_wait(this);
    if (!link_.arm_unless_completed()) {  // resumed before it was awaited: the value is here
      task_.segment().set_external_wait(nullptr);
      task_.let_go();
      return false;
    }
    after_suspend();
    return true;
  }

  R await_resume() {
    task_.segment().set_external_wait(nullptr);
    link_.disarm();
    before_resume();
    task_.segment().throw_if_cancelled();
    if (auto e = std::exchange(exception_, nullptr)) std::rethrow_exception(e);
    if constexpr (!std::is_void_v<R>) return std::move(*value_);
  }

  template <class U = R>
  requires(!std::is_void_v<U>) void resume(U&& value) {
    value_.emplace(std::forward<U>(value));
    resume_task();
  }
  void resume() requires std::is_void_v<R> { resume_task(); }
  void resume_exception(std::exception_ptr e) {
    exception_ = std::move(e);
    resume_task();
  }

 protected:
  virtual void after_suspend() {}
  virtual void before_resume() {}

  // The executor of the awaiting task (valid from after_suspend() on).
  const boost::asio::any_io_executor& executor() const noexcept { return task_.segment().executor(); }

 private:
  // Posted, not dispatched: the task must not run (and destroy this awaiter) inside resume().
  // Nothing touches this object once the task is posted (it may be gone).
  //
  // The pass comes before the wait is completed: the context's shutdown waits for the passes it
  // granted, so it finds either the wait completed and the resumption queued (destroyed with the
  // context's queue), or the wait still open, which it abandons and lets go of the task itself.
  // Completing first would leave the task to this thread, to be freed after its context is gone.
  void resume_task() {
    if (link_.complete_before_wait()) return;  // the await takes the value when it comes
    detail::context_gate::pass pass(*gate_);
    if (pass && link_.complete()) task_.resume_later_within_pass();
  }

  // The task's context is shutting down: its frames go now (this object too, if it lives there).
  void abandon() noexcept override {
    if (link_.abandon()) task_.let_go();
  }

  struct empty {};
  detail::suspended_task task_;
  std::shared_ptr<detail::context_gate> gate_;  // the task's context's: resume() may outlive it
  detail::wait_link link_{detail::wait_link::starts_idle_t{}};
  std::conditional_t<std::is_void_v<R>, empty, std::optional<std::conditional_t<std::is_void_v<R>, int, R>>> value_;
  std::exception_ptr exception_;
};

}  // namespace coral
