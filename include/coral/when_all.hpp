#pragma once

#include <tuple>
#include <utility>
#include <vector>

#include "coral/impl/join.hpp"
#include "coral/task.hpp"

namespace coral {

// `auto [a, b] = co_await when_all(x(), y());` runs the tasks concurrently, as children of the
// awaiting task, and resumes it (on its own executor) once every one has ended, with their
// results by position (a `void` result is std::monostate).
//
// - Arguments are tasks or coral awaitables (`ch.receive()`, `ch.send(v)`, `sleep_for(d)`, a
//   duration...); an awaitable is awaited by a task of its own.
// - A task runs on its bound executor type, else on the awaiting task's executor; children on
//   the awaiting task's executor start on the spot, one after the other, up to their first
//   suspension.
// - The first child to fail cancels its siblings; once they have all ended its exception is
//   rethrown (the siblings' outcomes are dropped, not reported as unobserved).
// - Cancelling the awaiting task cancels every child; the children are still awaited, and the
//   first failure (typically operation_aborted) is rethrown.
// - If the awaiting task's execution context shuts down meanwhile, the children are cancelled
//   and the awaiting task's frames are destroyed with the context.
template <detail::join_argument... A>
auto when_all(A&&... a);

// `std::vector<T> v = co_await when_all(std::move(tasks));` as above, for a vector of tasks
// (results in the vector's order; an empty vector completes at once with an empty result).
// For `task<void>` the result is a std::vector<std::monostate> of the same size.
template <class T, class E>
auto when_all(std::vector<task<T, E>> tasks);

namespace detail {

template <class... Tasks>
class when_all_awaiter final : public tuple_join_awaiter<join_kind::first_failure, Tasks...> {
  using base = tuple_join_awaiter<join_kind::first_failure, Tasks...>;

 public:
  using base::base;

  std::tuple<join_value_t<typename Tasks::value_type>...> await_resume() {
    return resume(std::index_sequence_for<Tasks...>{});
  }

 private:
  template <std::size_t... I>
  std::tuple<join_value_t<typename Tasks::value_type>...> resume(std::index_sequence<I...> indices) {
    if (auto failed = this->decisive(); failed >= 0) this->rethrow_if_failed(static_cast<std::size_t>(failed), indices);
    return {take_join_value(this->template result<I>())...};
  }
};

template <class Task>
class when_all_vector_awaiter final : public vector_join_awaiter<join_kind::first_failure, Task> {
  using base = vector_join_awaiter<join_kind::first_failure, Task>;

 public:
  using base::base;

  std::vector<join_value_t<typename Task::value_type>> await_resume() {
    if (auto failed = this->decisive(); failed >= 0) this->result(static_cast<std::size_t>(failed)).release();
    std::vector<join_value_t<typename Task::value_type>> values;
    values.reserve(this->size());
    for (std::size_t i = 0; i < this->size(); ++i) values.push_back(take_join_value(this->result(i)));
    return values;
  }
};

}  // namespace detail

template <detail::join_argument... A>
auto when_all(A&&... a) {
  return detail::when_all_awaiter<detail::join_task_t<A>...>(detail::as_join_task(std::forward<A>(a))...);
}

template <class T, class E>
auto when_all(std::vector<task<T, E>> tasks) {
  return detail::when_all_vector_awaiter<task<T, E>>(std::move(tasks));
}

}  // namespace coral
