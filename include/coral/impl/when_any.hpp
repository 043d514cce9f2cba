#pragma once

// The rest of when_any.hpp (which includes this at its end): the awaiters and the definitions.

#include <array>
#include <atomic>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "coral/impl/join.hpp"
#include "coral/task.hpp"

namespace coral {

namespace detail {

// As when_all_awaiter, the join itself is tuple_join_awaiter's; the two differ in when the join
// ends (the first end, not the first failure) and in the result (the winner's value alone).
// The value of a race (when_any_awaiter, select_awaiter: `race.outcome(f)`) as its variant V:
// the winner's value goes straight from its result into the variant, with one move (a received
// value on loan: its one move; see loan); what the winner took for the task goes to the task, or
// into `into`.
template <class V, class Race>
V race_value(Race& race, held_shares* into) {
  return race.outcome([into](auto won, auto& result) -> V {
    return hand_over_to_join(
        result,
        [](auto&&... a) { return V(std::in_place_index<decltype(won)::value>, std::forward<decltype(a)>(a)...); },
        into);
  });
}

// The result of a race for a join around it (coral_join_result R): a holding of the value and
// what the winner took, where the winner may have taken something.
template <class R, class V, class Race>
R race_join_result(Race& race) {
  return holding_if_held<R>([&](held_shares* into) { return race_value<V>(race, into); });
}

// The winner's outcome straight into the result `to` of the task that awaits the race as a join's
// argument, as the variant V: a received value on loan as it is (see loan), so that it goes back
// to its channel if the join around drops it or the task dies before it takes it.
template <class V, class Race>
void race_pass_on(Race& race, task_result<V>& to) {
  race.outcome([&](auto won, auto& outcome) { pass_on_within<V, decltype(won)::value>(outcome, to); });
}

template <class... Tasks>
class when_any_awaiter final : public tuple_join_awaiter<join_kind::first_end, Tasks...> {
  using base = tuple_join_awaiter<join_kind::first_end, Tasks...>;
  using result_type = std::variant<join_value_t<typename Tasks::value_type>...>;

 public:
  using base::base;
  // As a branch of another join: what the winner took for the task stays with the result (see
  // held_for_task).
  using coral_join_result = holding_if<any_held_v<typename Tasks::value_type...>, result_type>;

  result_type await_resume() { return race_value<result_type>(*this, nullptr); }
  coral_join_result coral_join_resume() { return race_join_result<coral_join_result, result_type>(*this); }
  void resume_into(task_result<result_type>& to) requires std::same_as<coral_join_result, result_type> {
    race_pass_on(*this, to);
  }

  // Instead of await_resume(): f(std::integral_constant<std::size_t, I>{}, result) for the winner I
  // and its member's result (for a task built on the join, which passes it on: any_of).
  template <class F>
  decltype(auto) outcome(F f) {
    const auto winner = static_cast<std::size_t>(this->decided_branch());
    return with_index<sizeof...(Tasks)>(
        winner, [&](auto won) -> decltype(auto) { return f(won, this->template result<decltype(won)::value>()); });
  }
};

template <class Task>
class when_any_vector_awaiter final : public vector_join_awaiter<join_kind::first_end, Task> {
  using base = vector_join_awaiter<join_kind::first_end, Task>;

 public:
  explicit when_any_vector_awaiter(std::vector<Task> tasks) : base(check(std::move(tasks))) {}

  using result_type = std::pair<std::size_t, join_value_t<typename Task::value_type>>;
  // (See when_any_awaiter.)
  using coral_join_result = holding_if<held_for_task<typename Task::value_type>, result_type>;

  result_type await_resume() { return resume(nullptr); }

  coral_join_result coral_join_resume() {
    if constexpr (held_for_task<coral_join_result>) {
      held_shares shares;
      result_type value = resume(&shares);
      return {std::move(value), std::move(shares)};
    } else {
      return resume(nullptr);
    }
  }

 private:
  result_type resume(held_shares* into) {
    const auto winner = static_cast<std::size_t>(this->decided_branch());
    return hand_over_to_join(
        this->result(winner),
        [&](auto&&... a) {
          return result_type(std::piecewise_construct, std::forward_as_tuple(winner),
                             std::forward_as_tuple(std::forward<decltype(a)>(a)...));
        },
        into);
  }

  static std::vector<Task> check(std::vector<Task> tasks) {
    if (tasks.empty()) throw std::invalid_argument("coral::when_any: no tasks to wait for (the vector is empty)");
    return tasks;
  }
};

// A number uniform in [0, n), from a generator of the thread: a select's first pass tries its
// ready-to-try operations in a random order per call, as Go's select, so that among operations
// ready at once each wins equally often, whatever the argument order and whatever else the select
// waits for, and no interleaving of selects on a thread makes one channel lose every time.
inline std::size_t select_random_below(std::size_t n) noexcept {
  static std::atomic<std::uint64_t> seeds{0x9e3779b97f4a7c15u};
  thread_local std::uint64_t state = seeds.fetch_add(0x9e3779b97f4a7c15u, std::memory_order_relaxed) | 1u;
  state ^= state << 13;  // xorshift64
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<std::size_t>(((state >> 32) * n) >> 32);
}

// An operation a select can attempt before anything waits: a channel operation, a lock, a permit
// or an event wait.
template <class A>
concept pollable = requires(A& a, task_segment& waker) {
  { a.poll(waker) } -> std::same_as<bool>;
};

// An operation whose await_resume() value a builder can take instead, with the value's one move:
// `resume_with(make)` returns make(args...), with the arguments that construct that value (a
// channel receive: a select builds its variant around the value received).
struct any_builder {
  template <class... Args>
  int operator()(Args&&...) const {
    return 0;
  }
};
template <class A>
concept builds_its_result = requires(std::remove_cvref_t<A>& a, any_builder make) {
  a.resume_with(make);
};

// when_any with such operations among its arguments. As Go's select, it first attempts them
// in a random order (a uniform permutation per call): one that can happen at once wins without
// any child task, and the other arguments never start. Otherwise the join runs as above.
template <class... A>
class select_awaiter {
  using join_type = when_any_awaiter<join_task_t<A>...>;
  using result_type = decltype(std::declval<join_type&>().await_resume());

 public:
  using coral_awaitable = void;
  // (See when_any_awaiter.)
  using coral_join_result = typename join_type::coral_join_result;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::join; }

  explicit select_awaiter(A... a) : arguments_(std::move(a)...) {
    std::apply(
        [](const auto&... argument) {
          if ((!valid(argument) || ...)) {
            throw std::logic_error(
                "coral: when_all / when_any of a task that is empty (moved from or already awaited)");
          }
        },
        arguments_);
  }

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> parent) {
    task_segment& segment = parent.promise().segment();
    segment.throw_if_cancelled();
    if (poll(segment)) return false;
    start_join(std::index_sequence_for<A...>{});
    return join_->await_suspend(parent);
  }

  result_type await_resume() {
    if (join_) return join_->await_resume();
    return with_index<pollable_positions.size()>(polled_, [&](auto k) -> result_type {
      constexpr std::size_t I = pollable_positions[decltype(k)::value];
      auto& argument = std::get<I>(arguments_);
      if constexpr (builds_its_result<decltype(argument)>) {
        // (A received value goes straight into the variant, with its one move.)
        return argument.resume_with(
            [](auto&&... a) { return result_type(std::in_place_index<I>, std::forward<decltype(a)>(a)...); });
      } else if constexpr (std::is_void_v<decltype(argument.await_resume())>) {
        argument.await_resume();
        return result_type(std::in_place_index<I>);
      } else {
        return result_type(std::in_place_index<I>, argument.await_resume());
      }
    });
  }

  coral_join_result coral_join_resume() { return race_join_result<coral_join_result, result_type>(*this); }
  void resume_into(task_result<result_type>& to) requires std::same_as<coral_join_result, result_type> {
    race_pass_on(*this, to);
  }

  // As when_any_awaiter::outcome. An operation that completed at once makes its result here.
  template <class F>
  decltype(auto) outcome(F f) {
    if (join_) return join_->outcome(f);
    return with_index<pollable_positions.size()>(polled_, [&](auto k) -> decltype(auto) {
      constexpr std::size_t I = pollable_positions[decltype(k)::value];
      auto& argument = std::get<I>(arguments_);
      task_result<typename join_task_t<std::tuple_element_t<I, std::tuple<A...>>>::value_type> result;
      if constexpr (requires { argument.resume_into(result); }) {
        argument.resume_into(result);  // a received value: lent, or moved once
      } else if constexpr (std::is_void_v<decltype(join_resume(argument))>) {
        argument.await_resume();
        result.set_value();
      } else {
        result.set_value(join_resume(argument));  // (a std-style lock: the permit it holds)
      }
      return f(std::integral_constant<std::size_t, I>{}, result);
    });
  }

 private:
  template <class X>
  static bool valid(const X& x) noexcept {
    if constexpr (is_task_v<X>) {
      return x.valid();
    } else {
      return true;
    }
  }

  // The positions of the arguments a select can attempt at once.
  static constexpr auto pollable_positions = [] {
    constexpr bool is_pollable[] = {pollable<A>...};
    std::array<std::size_t, (std::size_t{pollable<A>} + ...)> positions{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < sizeof...(A); ++i) {
      if (is_pollable[i]) positions[n++] = i;
    }
    return positions;
  }();

  bool poll(task_segment& segment) {
    std::array<std::size_t, pollable_positions.size()> order;  // of pollable_positions, shuffled (Fisher-Yates)
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    for (std::size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[select_random_below(k)]);
    for (const std::size_t k : order) {
      if (with_index<pollable_positions.size()>(
              k, [&](auto p) { return std::get<pollable_positions[decltype(p)::value]>(arguments_).poll(segment); })) {
        polled_ = k;
        return true;
      }
    }
    return false;
  }

  template <std::size_t... I>
  void start_join(std::index_sequence<I...>) {
    join_.emplace(as_join_task(std::move(std::get<I>(arguments_)))...);
  }

  std::tuple<A...> arguments_;
  std::size_t polled_ = 0;  // the operation that completed at once, as an index of pollable_positions
  std::optional<join_type> join_;
};

}  // namespace detail

template <detail::race_argument... A>
requires(sizeof...(A) > 0) auto when_any(A&&... a) {
  if constexpr ((detail::pollable<std::remove_cvref_t<A>> || ...)) {
    return detail::select_awaiter<std::remove_cvref_t<A>...>(std::forward<A>(a)...);
  } else {
    return detail::when_any_awaiter<detail::join_task_t<A>...>(detail::as_join_task(std::forward<A>(a))...);
  }
}

template <class T, class E>
auto when_any(std::vector<task<T, E>> tasks) {
  return detail::when_any_vector_awaiter<task<T, E>>(std::move(tasks));
}

}  // namespace coral
