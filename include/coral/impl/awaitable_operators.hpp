#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "coral/task.hpp"
#include "coral/when_all.hpp"
#include "coral/when_any.hpp"

namespace coral::detail {

template <class T>
inline constexpr bool is_tuple_v = false;
template <class... T>
inline constexpr bool is_tuple_v<std::tuple<T...>> = true;

// An operand that makes an operator coral's: a coral task or awaitable (a duration alone does not).
template <class A>
concept coral_operand = is_task_v<std::remove_cvref_t<A>> || requires {
  typename std::remove_cvref_t<A>::coral_awaitable;
};

// What an operator accepts: what when_all accepts, and asio::awaitable (code being migrated mixes
// the two).
template <class A>
concept operator_operand = join_argument<A> || is_asio_awaitable_v<std::remove_cvref_t<A>>;

template <class T, class E>
task<T> awaitable_task(asio::awaitable<T, E> a) {
  co_return co_await std::move(a);
}

// An operand as an argument of when_all: an asio::awaitable in a task of its own, the rest as is.
template <class A>
decltype(auto) join_operand(A&& a) {
  if constexpr (is_asio_awaitable_v<std::remove_cvref_t<A>>) {
    return awaitable_task(std::forward<A>(a));
  } else {
    return std::forward<A>(a);
  }
}

// As an argument of when_any: also an operation that cannot take part in a race as such (an Asio
// operation awaited with use_task, say: `t1.async_wait(use_task) || t2.async_wait(use_task)`) in a
// task of its own, which the race cancels if it loses, as Asio's `||` does.
template <class A>
decltype(auto) race_operand(A&& a) {
  if constexpr (is_asio_awaitable_v<std::remove_cvref_t<A>>) {
    return awaitable_task(std::forward<A>(a));
  } else if constexpr (race_argument<A>) {
    return std::forward<A>(a);
  } else {
    return as_join_task(std::forward<A>(a));
  }
}

template <class A>
using operand_value_t = user_value_t<typename join_task_t<decltype(join_operand(std::declval<A>()))>::value_type>;

template <class L, class R>
auto and_result() {
  if constexpr (std::is_void_v<L> && std::is_void_v<R>) {
    return std::type_identity<void>{};
  } else if constexpr (std::is_void_v<R>) {
    return std::type_identity<L>{};
  } else if constexpr (std::is_void_v<L>) {
    return std::type_identity<R>{};
  } else if constexpr (is_tuple_v<L>) {
    return std::type_identity<decltype(std::tuple_cat(std::declval<L>(), std::declval<std::tuple<R>>()))>{};
  } else {
    return std::type_identity<std::tuple<L, R>>{};
  }
}
template <class L, class R>
using and_result_t = typename decltype(and_result<L, R>())::type;

template <class L, class R>
struct or_result {
  using type = std::variant<join_value_t<L>, join_value_t<R>>;
};
template <class... L, class R>
struct or_result<std::variant<L...>, R> {
  using type = std::variant<L..., join_value_t<R>>;
};
template <class L, class R>
using or_result_t = typename or_result<L, R>::type;

template <class Result, class L, class R>
task<Result> all_of(L l, R r) {
  using lv = operand_value_t<L>;
  using rv = operand_value_t<R>;
  auto [x, y] = co_await when_all(join_operand(std::move(l)), join_operand(std::move(r)));
  if constexpr (std::is_void_v<Result>) {
    co_return;
  } else if constexpr (std::is_void_v<rv>) {
    co_return std::move(x);
  } else if constexpr (std::is_void_v<lv>) {
    co_return std::move(y);
  } else if constexpr (is_tuple_v<lv>) {
    co_return std::tuple_cat(std::move(x), std::tuple<rv>(std::move(y)));
  } else {
    co_return Result(std::move(x), std::move(y));
  }
}

template <class Result, class L, class R>
task<Result> any_of(L l, R r) {
  using lv = operand_value_t<L>;
  constexpr std::size_t last = std::variant_size_v<Result> - 1;
  auto race = when_any(race_operand(std::move(l)), race_operand(std::move(r)));
  co_await suspend_only<decltype(race)>{race};
  // The winner's outcome goes straight into this task's result (not through when_any's variant): a
  // received value on loan as it is (see loan), another value with one move. The left operand's
  // variant gives the first alternatives of the wider result.
  co_return result_writer{[&](task_result<Result>& result) {
    race.outcome([&](auto won, auto& outcome) {
      if constexpr (decltype(won)::value == 1) {
        pass_on_within<Result, last>(outcome, result);
      } else if constexpr (is_variant_v<lv>) {
        pass_on_widened(outcome, result);
      } else {
        pass_on_within<Result, 0>(outcome, result);
      }
    });
  }};
}

}  // namespace coral::detail
