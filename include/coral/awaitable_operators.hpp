#pragma once

#include <type_traits>
#include <utility>

#include "coral/impl/awaitable_operators.hpp"
#include "coral/task.hpp"
#include "coral/when_all.hpp"
#include "coral/when_any.hpp"

namespace coral {

// Asio's awaitable operators for coral tasks and awaitables, found by argument-dependent lookup
// (no using-directive needed; code written for asio::awaitable with
// `using namespace asio::experimental::awaitable_operators` compiles unchanged):
//
//   co_await (a() && b());          // when_all: both run; the first failure cancels the other
//   co_await (a() || b());          // when_any: the first to end wins; the loser is cancelled
//   co_await (ch.receive() || 5s);  // a lossless select, as when_any
//   co_await (sock.async_read_some(buf, use_task) || timer.async_wait(use_task));  // the loser is cancelled
//   co_await (coral_task() && legacy_awaitable());                                  // mixed, while migrating
//
// Each returns a task (so operators chain) that runs where it is awaited. Results are flattened
// as Asio flattens them: `void && void` is void, `T && void` and `void && T` are T, `T && U` is
// std::tuple<T, U>, and a tuple on the left grows (`(a && b) && c` is std::tuple<A, B, C>);
// `T || U` is std::variant<T, U> (void is std::monostate), and a variant on the left grows.
//
// Unlike Asio's `||` (which waits for the first *success*, and loses a value that completes while
// another operand wins), coral's `||` is when_any: the first operand to end wins, with a value or
// an exception, the other is cancelled and awaited, and channel operations among the operands are
// lossless. A chain is a select of a select: in `a || b || c` the operand `a || b` is a task, so
// when all three are ready `c` wins (a select tries its ready operations before it starts tasks);
// `when_any(a, b, c)` chooses among ready operations uniformly. A task is not a truth value:
// `bool r = a() || b();` does not compile.

template <class L, class R>
requires(detail::coral_operand<L> || detail::coral_operand<R>) &&
    detail::operator_operand<L>&& detail::operator_operand<R> CORAL_CORO_CONSUMING_WRAPPER auto operator&&(L&& l,
                                                                                                           R&& r) {
  using result = detail::and_result_t<detail::operand_value_t<L>, detail::operand_value_t<R>>;
  return detail::all_of<result, std::remove_cvref_t<L>, std::remove_cvref_t<R>>(std::forward<L>(l), std::forward<R>(r));
}

template <class L, class R>
requires(detail::coral_operand<L> || detail::coral_operand<R>) &&
    detail::operator_operand<L>&& detail::operator_operand<R> CORAL_CORO_CONSUMING_WRAPPER auto operator||(L&& l,
                                                                                                           R&& r) {
  using result = detail::or_result_t<detail::operand_value_t<L>, detail::operand_value_t<R>>;
  return detail::any_of<result, std::remove_cvref_t<L>, std::remove_cvref_t<R>>(std::forward<L>(l), std::forward<R>(r));
}

namespace detail {
// Channel operations and other coral awaitables live here: their operators are found here too.
using coral::operator&&;
using coral::operator||;
}  // namespace detail

}  // namespace coral
