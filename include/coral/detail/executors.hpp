#pragma once

#include <type_traits>

#include "coral/detail/asio.hpp"
#include "coral/loop_executor.hpp"

namespace coral::detail {

template <class E>
concept executor_like = asio::execution::is_executor<E>::value || asio::is_executor<E>::value;

template <class C>
concept execution_context_like = std::is_convertible_v<C&, asio::execution_context&> && requires(C& c) {
  c.get_executor();
};

// What coral APIs taking "an executor or an execution context" run on.
template <class E>
decltype(auto) executor_of(E& e) {
  if constexpr (execution_context_like<E>) {
    return e.get_executor();
  } else {
    return (e);
  }
}

// The io_context executor behind `executor`, if that is what it is (io_context's own or
// loop_executor): code that can use the typed executor is smaller than with the type-erased one.
inline const asio::io_context::executor_type* io_context_executor_of(const asio::any_io_executor& executor) {
  if (auto* io = executor.target<asio::io_context::executor_type>()) return io;
  return executor.target<loop_executor>();
}

}  // namespace coral::detail
