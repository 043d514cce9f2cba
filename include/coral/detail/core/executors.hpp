#pragma once

#include <optional>
#include <type_traits>

#include "coral/detail/core/asio.hpp"

namespace coral::detail {

template <class E>
concept executor_like = asio::execution::is_executor<E>::value || asio::is_executor<E>::value;

// An execution context, or anything that owns one and hands out its executor (coral::event_loop).
template <class C>
concept execution_context_like = !executor_like<C> && requires(C & c) {
  { c.get_executor() } -> executor_like;
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

// Type-erases an executor. coral's default executor types derive from Asio's, and are erased as
// the Asio type they are, so that coral recognises them (and Asio's typed fast paths apply).
template <class E>
asio::any_io_executor erase_executor(const E& e) {
  if constexpr (std::is_base_of_v<asio::io_context::executor_type, E>) {
    return asio::any_io_executor(static_cast<const asio::io_context::executor_type&>(e));
  } else if constexpr (std::is_base_of_v<asio::thread_pool::executor_type, E>) {
    return asio::any_io_executor(static_cast<const asio::thread_pool::executor_type&>(e));
  } else {
    return asio::any_io_executor(e);
  }
}

using io_strand = asio::strand<asio::io_context::executor_type>;
using pool_strand = asio::strand<asio::thread_pool::executor_type>;
using any_strand = asio::strand<asio::any_io_executor>;

// What a type-erased executor is, among the kinds coral posts to without type erasure (found once
// per task, where its executor is chosen).
enum class executor_target : unsigned char { other, io_context, thread_pool, io_strand, pool_strand };

// The io_context executor behind `executor` (directly or under a strand), if that is what it is:
// code that can use the typed executor is smaller than with the type-erased one.
inline std::optional<asio::io_context::executor_type> io_context_executor_of(const asio::any_io_executor& executor) {
  if (auto* io = executor.target<asio::io_context::executor_type>()) return *io;
  if (auto* s = executor.target<io_strand>()) return s->get_inner_executor();
  return std::nullopt;
}

// The executor under a strand (what I/O objects should be bound to: it holds no strand, so an I/O
// object outliving its strand's context touches nothing of it).
inline asio::any_io_executor inner_executor_of(const asio::any_io_executor& executor) {
  if (auto* s = executor.target<io_strand>()) return s->get_inner_executor();
  if (auto* s = executor.target<pool_strand>()) return s->get_inner_executor();
  if (auto* s = executor.target<any_strand>()) return s->get_inner_executor();
  return executor;
}

}  // namespace coral::detail
