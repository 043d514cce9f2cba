#pragma once

#include <cassert>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "coral/detail/join/join_awaiter.hpp"
#include "coral/detail/join/join_state.hpp"
#include "coral/task.hpp"

namespace coral::detail {

// What a join hands back for a child's result: `void` becomes std::monostate, a held result what
// the task gets for it.
template <class T>
using join_value_t = std::conditional_t<std::is_void_v<user_value_t<T>>, std::monostate, user_value_t<T>>;

// Whether a join of children of these result types may hold something for the task (see
// held_for_task): then the join's result for a join around it (coral_join_result) is a holding.
template <class... T>
inline constexpr bool any_held_v = (held_for_task<T> || ...);

// Hands a child's outcome over to `make` as the arguments that construct the join's value (with
// task_result::take_or_rethrow_with's single move): what it holds goes to the task, or into `into`.
template <class T, class Make>
decltype(auto) hand_over_to_join(task_result<T>& result, Make&& make, held_shares* into = nullptr) {
  if constexpr (held_for_task<T>) {
    if constexpr (std::is_void_v<user_value_t<T>>) {
      result.take_or_rethrow().hand_over_holds(into);
      return make();
    } else {
      return make(result.take_or_rethrow().hand_over_holds(into));
    }
  } else {
    return result.take_or_rethrow_with(std::forward<Make>(make));
  }
}

// A member's value for a join that makes a whole of several (a tuple): a value lent to the member
// (see loan) is taken provisionally, and confirmed once the whole is made (confirm_taken), else
// it goes back.
template <class T>
join_value_t<T> take_join_value(task_result<T>& result, held_shares* into = nullptr) {
  if constexpr (held_for_task<T>) {
    if constexpr (std::is_void_v<user_value_t<T>>) {
      result.take_or_rethrow().hand_over_holds(into);
      return {};
    } else {
      return result.take_or_rethrow().hand_over_holds(into);
    }
  } else if constexpr (std::is_void_v<T>) {
    result.take_or_rethrow();
    return {};
  } else {
    return result.take_provisionally();
  }
}

// Passes a join member's outcome on to the result of the task built on the join, where it is the
// alternative I of the variant W: a loan as it is (see loan), a value with one move; an exception
// is rethrown.
template <class W, std::size_t I, class T>
void pass_on_within(task_result<T>& from, task_result<W>& to) {
  if constexpr (lendable_v<T>) {
    if (from.has_loan()) return to.set_loan(from.take_loan().template within<W, I>());
  }
  hand_over_to_join(from, [&](auto&&... a) { to.set_value(std::in_place_index<I>, std::forward<decltype(a)>(a)...); });
}

// As pass_on_within, where it is the same type.
template <class T>
void pass_on(task_result<T>& from, task_result<T>& to) {
  if constexpr (lendable_v<T>) {
    if (from.has_loan()) return to.set_loan(from.take_loan());
  }
  from.take_or_rethrow_with([&](auto&&... a) { to.set_value(std::forward<decltype(a)>(a)...); });
}

// As pass_on_within, for a variant V whose alternatives are the first ones of the variant W.
template <class W, class V>
void pass_on_widened(task_result<V>& from, task_result<W>& to) {
  if constexpr (lendable_v<V>) {
    if (from.has_loan()) return to.set_loan(from.take_loan().template widened<W>());
  }
  if (!from.has_value()) from.take_or_rethrow();  // rethrows
  V& v = from.peek();
  with_index<std::variant_size_v<V>>(v.index(), [&](auto j) {
    constexpr std::size_t J = decltype(j)::value;
    to.set_value(std::in_place_index<J>, std::get<J>(std::move(v)));
  });
}

// What awaiting `A` as a join's argument yields: a coral awaitable's await_resume() (or, for one
// whose await leaves something taken, what owns it: coral_join_resume()), nothing for a duration.
template <class A>
struct awaited_by_task {
  using type = decltype(std::declval<A&>().await_resume());
};
template <class A>
requires requires {
  typename A::coral_join_result;
}
struct awaited_by_task<A> {
  using type = typename A::coral_join_result;
};
template <class Rep, class Period>
struct awaited_by_task<std::chrono::duration<Rep, Period>> {
  using type = void;
};

template <class A>
concept join_argument = is_task_v<std::remove_cvref_t<A>> || is_duration_v<std::remove_cvref_t<A>> || requires {
  typename std::remove_cvref_t<A>::coral_awaitable;
};

// An awaitable that can take part in a race and then happens only if it wins (channel
// operations: a losing receive consumed nothing, a losing send delivered nothing; a lock or
// acquire that lost took nothing; an event wait that lost consumed nothing).
template <class A>
concept raceable = requires(std::remove_cvref_t<A>& a, race_ticket t) {
  a.enter_race(t);
};

// What when_any accepts: tasks, durations, raceable awaitables and joins (which a race cancels as
// it cancels a task). Other awaitables are not accepted: one that lost could not be undone.
template <class A>
concept race_argument =
    is_task_v<std::remove_cvref_t<A>> || is_duration_v<std::remove_cvref_t<A>> || raceable<A> || requires {
  typename std::remove_cvref_t<A>::coral_join_result;
};

// `co_await current_segment{}`: the segment of the awaiting task, without suspending.
struct current_segment {
  using coral_awaitable = void;
  task_segment* segment = nullptr;
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) noexcept {
    segment = &coroutine.promise().segment();
    return false;
  }
  task_segment& await_resume() const noexcept { return *segment; }
};

// A raceable awaitable's result for the join (see awaited_by_task).
template <class A>
decltype(auto) join_resume(A& awaitable) {
  if constexpr (requires { typename A::coral_join_result; }) {
    return awaitable.coral_join_resume();
  } else {
    return awaitable.await_resume();
  }
}

// Suspends on an awaitable without resuming it: the caller ends the operation its own way (a race
// branch, in await_in_race; a join whose winner's outcome is passed on, in any_of).
template <class A>
struct suspend_only {
  using coral_awaitable = void;
  A& awaitable;
  // (What the branch waits on is what the awaitable does.)
  wait_kind coral_wait_kind() const noexcept { return wait_of(awaitable).first; }
  std::int64_t coral_wait_detail() const noexcept { return wait_of(awaitable).second; }
  bool await_ready() { return awaitable.await_ready(); }
  template <class Promise>
  decltype(auto) await_suspend(std::coroutine_handle<Promise> coroutine) {
    return awaitable.await_suspend(coroutine);
  }
  void await_resume() const noexcept {}
};

template <class R, class A>
task<R> await_in_task(A awaitable) {
  if constexpr (requires(task_result<R> & result) { awaitable.resume_into(result); }) {
    // (A race: its winner's value straight into this task's result, lent or moved once.)
    co_await suspend_only<A>{awaitable};
    co_return result_writer{[&](task_result<R>& result) { awaitable.resume_into(result); }};
  } else if constexpr (requires { typename A::coral_join_result; }) {
    // (A join: what its branches took for the task stays with the result.)
    co_await suspend_only<A>{awaitable};
    co_return awaitable.coral_join_resume();
  } else if constexpr (std::is_void_v<R>) {
    co_await std::move(awaitable);
  } else {
    co_return co_await std::move(awaitable);
  }
}

// What a branch awaits for a join argument: a raceable awaitable itself, a sleep for a duration.
template <class A>
auto race_awaitable(A&& argument) {
  if constexpr (is_duration_v<std::remove_cvref_t<A>>) {
    return sleep_awaiter::after(argument);
  } else {
    return std::move(argument);
  }
}

// A raceable awaitable (or a duration) in a task of its own: in a when_any it carries its
// branch's ticket (the segment running it is the branch); in a when_all the ticket is empty. A
// branch whose operation was cancelled because another branch won ends without throwing and
// without a result (the join reads only the winner's), which spares each select and timeout an
// exception, and makes no R: a losing receive makes no value that nobody sent.
template <class R, class A>
task<R> await_in_race(A argument) {
  // (This task is only ever a join's member: the segment running it is the branch.)
  task_segment& segment = co_await current_segment{};
  assert(dynamic_cast<join_member<R>*>(&segment));
  const race_ticket ticket = static_cast<join_member<R>&>(segment).ticket();
  auto awaitable = race_awaitable(std::move(argument));
  awaitable.enter_race(ticket);
  co_await suspend_only<decltype(awaitable)>{awaitable};
  if constexpr (std::is_void_v<R>) {
    if (ticket.lost() && awaitable.lost_race()) co_return;
    awaitable.await_resume();
  } else {
    if (ticket.lost() && awaitable.lost_race()) co_return no_result;
    if constexpr (requires(task_result<R> & result) { awaitable.resume_into(result); }) {
      // (A received value goes straight into the branch's result, lent or moved once.)
      co_return result_writer{[&](task_result<R>& result) { awaitable.resume_into(result); }};
    } else {
      co_return join_resume(awaitable);
    }
  }
}

// A join's argument as a task: a task as it is, an awaitable (channel operation, sleep, lock...)
// inside a task that awaits it on the parent's executor.
template <join_argument A>
CORAL_CORO_CONSUMING_WRAPPER auto as_join_task(A&& a) {
  using D = std::remove_cvref_t<A>;
  if constexpr (is_task_v<D>) {
    return D(std::forward<A>(a));
  } else if constexpr (raceable<D> || is_duration_v<D>) {
    return await_in_race<typename awaited_by_task<D>::type>(D(std::forward<A>(a)));
  } else {
    return await_in_task<typename awaited_by_task<D>::type>(D(std::forward<A>(a)));
  }
}

template <class A>
using join_task_t = decltype(as_join_task(std::declval<A>()));

// Awaits a fixed set of tasks as children of a join (when_all / when_any of arguments).
template <join_kind Kind, class... Tasks>
class tuple_join_awaiter : protected join_awaiter_base {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::join; }

  explicit tuple_join_awaiter(Tasks... tasks) : tasks_(std::move(tasks)...) {
    std::apply(
        [](const auto&... t) {
          if ((!t.valid() || ...)) {
            throw std::logic_error(
                "coral: when_all / when_any of a task that is empty (moved from or already awaited)");
          }
        },
        tasks_);
  }
  tuple_join_awaiter(tuple_join_awaiter&&) = default;
  ~tuple_join_awaiter() {
    std::apply([this](auto&... m) { (this->let_go_of(m), ...); }, members_);
  }

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> parent) {
    return suspend(parent, std::index_sequence_for<Tasks...>{});
  }

 protected:
  template <std::size_t I>
  auto& result() noexcept {
    return std::get<I>(members_)->result();
  }

  // The index of the child that decided the join (first failure / first end), or -1.
  std::ptrdiff_t decided_branch() noexcept {
    finish_waiting();
    return join().decided_branch();
  }

  // Rethrows child `i`'s exception, if it has one.
  template <std::size_t... I>
  void rethrow_if_failed(std::size_t i, std::index_sequence<I...>) {
    ((I == i && result<I>().has_exception() ? (void)result<I>().take_or_rethrow() : void()), ...);
  }

 private:
  template <class Promise, std::size_t... I>
  bool suspend(std::coroutine_handle<Promise> parent, std::index_sequence<I...>) {
    open(parent, Kind, sizeof...(Tasks));
    try {
      ((std::get<I>(members_) = make_member(std::get<I>(tasks_).release(),
                                            bound_executor<std::tuple_element_t<I, std::tuple<Tasks...>>>(), I)),
       ...);
      begin_start();
    } catch (...) {
      // (An allocation failed: the members made so far end unstarted, and the exception reaches
      // the parent, which never suspended.)
      (discard_unstarted(std::get<I>(members_)), ...);
      throw;
    }
    (start(*std::get<I>(members_)), ...);
    return end_start();
  }

  std::tuple<Tasks...> tasks_;
  std::tuple<counted_ref<join_member<typename Tasks::value_type>>...> members_;
};

// Awaits a vector of tasks as children of a join (when_all / when_any of a vector).
template <join_kind Kind, class Task>
class vector_join_awaiter : protected join_awaiter_base {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::join; }
  using value_type = typename Task::value_type;

  explicit vector_join_awaiter(std::vector<Task> tasks) : tasks_(std::move(tasks)) {
    for (const auto& t : tasks_) {
      if (!t.valid())
        throw std::logic_error("coral: when_all / when_any of a task that is empty (moved from or already awaited)");
    }
  }
  vector_join_awaiter(vector_join_awaiter&&) = default;
  ~vector_join_awaiter() {
    for (auto& m : members_) this->let_go_of(m);
  }

  bool await_ready() const noexcept { return tasks_.empty(); }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> parent) {
    open(parent, Kind, tasks_.size());
    try {
      members_.reserve(tasks_.size());
      const auto bound = bound_executor<Task>();
      for (std::size_t i = 0; i < tasks_.size(); ++i) members_.push_back(make_member(tasks_[i].release(), bound, i));
      begin_start();
    } catch (...) {
      // (An allocation failed: the members made so far end unstarted, and the exception reaches
      // the parent, which never suspended.)
      for (const auto& m : members_) discard_unstarted(m);
      throw;
    }
    for (const auto& m : members_) start(*m);
    return end_start();
  }

 protected:
  std::size_t size() const noexcept { return members_.size(); }
  task_result<value_type>& result(std::size_t i) noexcept { return members_[i]->result(); }
  std::ptrdiff_t decided_branch() noexcept {
    if (members_.empty()) return -1;
    finish_waiting();
    return join().decided_branch();
  }

 private:
  std::vector<Task> tasks_;
  std::vector<counted_ref<join_member<value_type>>> members_;
};

}  // namespace coral::detail
