#pragma once

// The rest of when_all.hpp (which includes this at its end): the awaiters and the definitions.

#include <tuple>
#include <utility>
#include <vector>

#include "coral/impl/join.hpp"
#include "coral/task.hpp"

namespace coral {

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
    if (auto failed = this->decisive(); failed >= 0) this->result(static_cast<std::size_t>(failed)).hand_over();
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
