#pragma once

#include <type_traits>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/wait/async_op_awaiter.hpp"

namespace coral {

// A completion token that makes any Asio asynchronous operation awaitable inside a coral task:
//   std::size_t n = co_await socket.async_read_some(buffer, coral::use_task);
// The operation's handler runs on the task's executor and uses the task's cancellation slot, so
// cancelling the task cancels the operation. A leading error_code that is set is thrown as
// boost::system::system_error, a leading exception_ptr is rethrown; the remaining arguments are
// the result (nothing, one value, or a tuple). asio::as_tuple(use_task) returns all of them.
//
// Thread safety: distinct objects: safe. Shared objects: safe (a stateless token).
struct use_task_t {
  constexpr use_task_t() noexcept = default;
  // As use_awaitable_t's, for code written under BOOST_ASIO_ENABLE_HANDLER_TRACKING
  // (`use_task_t(__FILE__, __LINE__, __func__)`); coral does not record the location.
  constexpr use_task_t(const char*, int, const char*) noexcept {}

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
}  // namespace coral

namespace boost::asio {

template <class... Args>
class async_result<coral::use_task_t, void(Args...)> {
 public:
  // For adapters that name the result before they initiate (redirect_error, as_single,
  // bind_cancellation_slot): any operation's awaiter converts to it.
  using return_type = coral::detail::erased_async_op_awaiter<void(Args...)>;

  template <class Initiation, class... InitArgs>
  static auto initiate(Initiation&& initiation, coral::use_task_t, InitArgs&&... args) {
    return coral::detail::async_op_awaiter<void(Args...), std::decay_t<Initiation>, std::decay_t<InitArgs>...>(
        std::forward<Initiation>(initiation), std::forward<InitArgs>(args)...);
  }
};

}  // namespace boost::asio
