#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/suspended_task.hpp"
#include "coral/detail/wait_link.hpp"

namespace coral {

// The articles' generic awaiter. Derive from awaiter<R>, start something in after_suspend() and
// call resume(value) / resume_exception(e) (resume() for awaiter<void>) exactly once, from any
// thread, when it is done. coral installs the task's executor: the task always continues there,
// never inside the resume() call. before_resume() runs on the task's executor just before the
// value is handed to the task.
//
// What coral starts here cannot be interrupted by coral, so cancellation is checked before
// after_suspend() and after the task resumes: a cancelled task's await fails with
// operation_aborted (the value is discarded). If the task's execution context shuts down while
// it waits, the task's frames are destroyed with the context; a later resume() on an awaiter that
// lives outside the task does nothing (one that lived in the task's frame is gone with it: the
// operation must not resume it then, as an Asio operation must not call a destroyed handler).
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

  awaiter() = default;
  awaiter(const awaiter&) = delete;
  awaiter& operator=(const awaiter&) = delete;
  virtual ~awaiter() = default;

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    task_.suspend(coroutine);
    link_.arm();
    task_.segment().set_external_wait(this);
    after_suspend();
  }

  R await_resume() {
    task_.segment().set_external_wait(nullptr);
    before_resume();
    task_.segment().throw_if_cancelled();
    if (exception_) std::rethrow_exception(exception_);
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
  // Nothing touches this object afterwards (it may be gone). After the task was let go (its
  // context shut down), resume() does nothing.
  void resume_task() {
    if (link_.complete()) task_.resume_later();
  }

  // The task's context is shutting down: its frames go now (this object too, if it lives there).
  void abandon() noexcept override {
    if (link_.detach()) task_.let_go();
  }

  struct empty {};
  detail::suspended_task task_;
  detail::wait_link link_;
  std::conditional_t<std::is_void_v<R>, empty, std::optional<std::conditional_t<std::is_void_v<R>, int, R>>> value_;
  std::exception_ptr exception_;
};

}  // namespace coral
