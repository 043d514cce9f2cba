#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/task_root.hpp"

namespace coral {

// The articles' generic awaiter. Derive from awaiter<R>, start something in after_suspend() and
// call resume(value) / resume_exception(e) (resume() for awaiter<void>) exactly once, from any
// thread, when it is done. coral installs the task's executor: the task always continues there,
// never inside the resume() call. before_resume() runs on the task's executor just before the
// value is handed to the task.
//
//   struct read_line : coral::awaiter<std::string> {
//     void after_suspend() override { start_reading([this](std::string s) { resume(std::move(s)); }); }
//   };
//   std::string line = co_await read_line{};
template <class R>
class awaiter {
 public:
  using coral_awaitable = void;

  awaiter() = default;
  awaiter(const awaiter&) = delete;
  awaiter& operator=(const awaiter&) = delete;
  virtual ~awaiter() = default;

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    context_ = &coroutine.promise().context();
    coroutine_ = coroutine;
    keep_ = detail::keep_alive(context_->root);
    after_suspend();
  }

  R await_resume() {
    before_resume();
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
  const asio::any_io_executor& executor() const noexcept { return context_->executor; }

 private:
  // Posted, not dispatched: the task must not run (and destroy this awaiter) inside resume().
  void resume_task() { asio::post(context_->executor, detail::resume_handler{coroutine_, std::move(keep_)}); }

  struct empty {};
  detail::task_context* context_ = nullptr;
  std::coroutine_handle<> coroutine_;
  detail::keep_alive keep_;
  std::conditional_t<std::is_void_v<R>, empty, std::optional<std::conditional_t<std::is_void_v<R>, int, R>>> value_;
  std::exception_ptr exception_;
};

}  // namespace coral
