#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

// Where an operation awaited with use_task leaves its completion arguments, and what
// `co_await` makes of them.
template <class... Args>
class async_op_results {
 protected:
  using handler = task_completion_handler<Args...>;

 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::asio_operation; }

  bool await_ready() const noexcept { return false; }

  auto await_resume() {
    return std::apply([](auto&... values) { return unpack(values...); }, *results_);
  }

 protected:
  template <class Promise, class Start>
  void start(std::coroutine_handle<Promise> coroutine, Start&& start) {
    suspended_task task;
    task.suspend(coroutine);
    std::forward<Start>(start)(handler(results_, std::move(task)));
  }

 private:
  template <class First, class... Rest>
  static auto unpack(First& first, Rest&... rest) {
    if constexpr (std::is_same_v<First, boost::system::error_code>) {
      if (first) throw boost::system::system_error(first);
      return values(rest...);
    } else if constexpr (std::is_same_v<First, std::exception_ptr>) {
      if (first) std::rethrow_exception(first);
      return values(rest...);
    } else {
      return values(first, rest...);
    }
  }
  static void unpack() {}

  template <class... V>
  static auto values(V&... v) {
    if constexpr (sizeof...(V) == 0) {
      return;
    } else if constexpr (sizeof...(V) == 1) {
      return std::move(v...);
    } else {
      return std::tuple<V...>(std::move(v)...);
    }
  }

  typename handler::results_type results_;
};

// What `co_await op(use_task)` awaits: the operation is started in await_suspend, with a handler
// that resumes the task.
template <class Signature, class Initiation, class... InitArgs>
class async_op_awaiter;

template <class Signature>
class erased_async_op_awaiter;

template <class... Args, class Initiation, class... InitArgs>
class async_op_awaiter<void(Args...), Initiation, InitArgs...> : public async_op_results<Args...> {
 public:
  template <class I, class... A>
  explicit async_op_awaiter(I&& initiation, A&&... args)
      : initiation_(std::forward<I>(initiation)), args_(std::forward<A>(args)...) {}

  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    this->start(coroutine, [this](auto handler) { initiate(std::move(handler)); });
  }

 private:
  friend class erased_async_op_awaiter<void(Args...)>;

  void initiate(typename async_op_results<Args...>::handler handler) {
    std::apply([&](InitArgs&... args) { std::move(initiation_)(std::move(handler), std::move(args)...); }, args_);
  }

  Initiation initiation_;
  std::tuple<InitArgs...> args_;
};

// The same, with the operation's type erased: what token adapters that name the awaiter's type
// before they know the operation (redirect_error, as_single, bind_cancellation_slot) return.
// Costs an allocation for the operation's initiation and arguments.
template <class... Args>
class erased_async_op_awaiter<void(Args...)> : public async_op_results<Args...> {
  using handler = typename async_op_results<Args...>::handler;

  struct operation {
    virtual ~operation() = default;
    virtual void initiate(handler h) = 0;
  };
  template <class Awaiter>
  struct typed_operation final : operation {
    explicit typed_operation(Awaiter&& a) : awaiter(std::move(a)) {}
    void initiate(handler h) override { awaiter.initiate(std::move(h)); }
    Awaiter awaiter;
  };

 public:
  template <class Initiation, class... InitArgs>
  erased_async_op_awaiter(async_op_awaiter<void(Args...), Initiation, InitArgs...>&& typed)
      : operation_(std::make_unique<typed_operation<async_op_awaiter<void(Args...), Initiation, InitArgs...>>>(
            std::move(typed))) {}

  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    this->start(coroutine, [this](handler h) { operation_->initiate(std::move(h)); });
  }

 private:
  std::unique_ptr<operation> operation_;
};

}  // namespace coral::detail
