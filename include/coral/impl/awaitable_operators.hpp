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
CORAL_CORO_CONSUMING_WRAPPER decltype(auto) join_operand(A&& a) {
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
CORAL_CORO_CONSUMING_WRAPPER decltype(auto) race_operand(A&& a) {
  if constexpr (is_asio_awaitable_v<std::remove_cvref_t<A>>) {
    return awaitable_task(std::forward<A>(a));
  } else if constexpr (race_argument<A>) {
    return std::forward<A>(a);
  } else {
    return as_join_task(std::forward<A>(a));
  }
}

// What an operand's branch of the join yields (a held permit, for `m.lock()`), and what the
// awaiting task gets for it.
template <class A>
using operand_result_t = typename join_task_t<decltype(join_operand(std::declval<A>()))>::value_type;
template <class A>
using operand_value_t = user_value_t<operand_result_t<A>>;

// Whether an operator's result may hold something its operands took for the task (a std-style
// lock): then the task built on the join yields a holding (see held_for_task), so that a join
// around it that drops it gives the lock back.
template <class L, class R>
inline constexpr bool operands_hold_v = any_held_v<operand_result_t<L>, operand_result_t<R>>;

template <class Result, class L, class R>
using operator_task_t = task<holding_if<operands_hold_v<L, R>, Result>>;

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

// `a && b`'s value from the values of its operands (x, y: as when_all hands them back).
template <class Result, class L, class R, class X, class Y>
Result and_value(X&& x, Y&& y) {
  using lv = operand_value_t<L>;
  using rv = operand_value_t<R>;
  if constexpr (std::is_void_v<Result>) {
    return;
  } else if constexpr (std::is_void_v<rv>) {
    return std::move(x);
  } else if constexpr (std::is_void_v<lv>) {
    return std::move(y);
  } else if constexpr (is_tuple_v<lv>) {
    return std::tuple_cat(std::move(x), std::tuple<rv>(std::move(y)));
  } else {
    return Result(std::move(x), std::move(y));
  }
}

template <class Result, class L, class R>
operator_task_t<Result, L, R> all_of(L l, R r) {
  auto join = when_all(join_operand(std::move(l)), join_operand(std::move(r)));
  if constexpr (operands_hold_v<L, R>) {
    co_await suspend_only<decltype(join)>{join};
    auto held = join.coral_join_resume();
    auto& [x, y] = held.value;
    if constexpr (std::is_void_v<Result>) {
      co_return holding<void>{std::move(held.shares)};
    } else {
      co_return holding<Result>{and_value<Result, L, R>(std::move(x), std::move(y)), std::move(held.shares)};
    }
  } else {
    auto [x, y] = co_await std::move(join);
    co_return and_value<Result, L, R>(std::move(x), std::move(y));
  }
}

template <class Result, class L, class R>
operator_task_t<Result, L, R> any_of(L l, R r) {
  using lv = operand_value_t<L>;
  constexpr std::size_t last = std::variant_size_v<Result> - 1;
  auto race = when_any(race_operand(std::move(l)), race_operand(std::move(r)));
  co_await suspend_only<decltype(race)>{race};
  if constexpr (operands_hold_v<L, R>) {
    // (What the winner took stays with the result; the left operand's variant gives the first
    // alternatives of the wider one.)
    co_return holding_if_held<holding<Result>>([&](held_shares* into) {
      return race.outcome([&](auto won, auto& outcome) -> Result {
        return hand_over_to_join(
            outcome,
            [](auto&&... a) -> Result {
              if constexpr (decltype(won)::value == 1) {
                return Result(std::in_place_index<std::variant_size_v<Result> - 1>, std::forward<decltype(a)>(a)...);
              } else if constexpr (is_variant_v<lv>) {
                lv v(std::forward<decltype(a)>(a)...);
                return with_index<std::variant_size_v<lv>>(v.index(), [&](auto j) -> Result {
                  return Result(std::in_place_index<decltype(j)::value>, std::get<decltype(j)::value>(std::move(v)));
                });
              } else {
                return Result(std::in_place_index<0>, std::forward<decltype(a)>(a)...);
              }
            },
            into);
      });
    });
  } else {
    // The winner's outcome goes straight into this task's result (not through when_any's
    // variant): a received value on loan as it is (see loan), another value with one move. The
    // left operand's variant gives the first alternatives of the wider result.
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
}

}  // namespace coral::detail
