#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "coral/detail/asio.hpp"
#include "coral/detail/suspended_task.hpp"

namespace coral {

// A completion token that makes any Asio asynchronous operation awaitable inside a coral task:
//   std::size_t n = co_await socket.async_read_some(buffer, coral::use_task);
// The operation's handler runs on the task's executor and uses the task's cancellation slot, so
// cancelling the task cancels the operation. A leading error_code that is set is thrown as
// boost::system::system_error, a leading exception_ptr is rethrown; the remaining arguments are
// the result (nothing, one value, or a tuple). asio::as_tuple(use_task) returns all of them.
struct use_task_t {
  constexpr use_task_t() noexcept = default;

  // An executor adapter whose default completion token is use_task.
  template <class InnerExecutor>
  struct executor_with_default : InnerExecutor {
    using default_completion_token_type = use_task_t;

    executor_with_default(const InnerExecutor& ex) noexcept : InnerExecutor(ex) {}

    template <class OtherExecutor>
    requires(!std::is_same_v<OtherExecutor, executor_with_default> &&
             std::is_convertible_v<OtherExecutor, InnerExecutor>) executor_with_default(const OtherExecutor& ex)
    noexcept : InnerExecutor(ex) {}
  };

  template <class T>
  using as_default_on_t = typename T::template rebind_executor<executor_with_default<typename T::executor_type>>::other;

  template <class T>
  static auto as_default_on(T&& object) {
    return as_default_on_t<std::decay_t<T>>(std::forward<T>(object));
  }
};

inline constexpr use_task_t use_task{};

namespace detail {

// What `co_await op(use_task)` awaits: the operation is started in await_suspend, with a handler
// that resumes the task.
template <class Signature, class Initiation, class... InitArgs>
class async_op_awaiter;

template <class... Args, class Initiation, class... InitArgs>
class async_op_awaiter<void(Args...), Initiation, InitArgs...> {
  using handler = resuming_handler<Args...>;

 public:
  using coral_awaitable = void;

  template <class I, class... A>
  explicit async_op_awaiter(I&& initiation, A&&... args)
      : initiation_(std::forward<I>(initiation)), args_(std::forward<A>(args)...) {}

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) {
    suspended_task task;
    task.suspend(coroutine);
    std::apply(
        [&](InitArgs&... args) { std::move(initiation_)(handler(results_, std::move(task)), std::move(args)...); },
        args_);
  }

  auto await_resume() {
    return std::apply([](auto&... values) { return unpack(values...); }, *results_);
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

  Initiation initiation_;
  std::tuple<InitArgs...> args_;
  typename handler::results_type results_;
};

}  // namespace detail
}  // namespace coral

namespace boost::asio {

template <class... Args>
class async_result<coral::use_task_t, void(Args...)> {
 public:
  template <class Initiation, class... InitArgs>
  static auto initiate(Initiation&& initiation, coral::use_task_t, InitArgs&&... args) {
    return coral::detail::async_op_awaiter<void(Args...), std::decay_t<Initiation>, std::decay_t<InitArgs>...>(
        std::forward<Initiation>(initiation), std::forward<InitArgs>(args)...);
  }
};

}  // namespace boost::asio
