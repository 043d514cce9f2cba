#pragma once

// The rest of when_all.hpp (which includes this at its end): the awaiters and the definitions.

#include <tuple>
#include <utility>
#include <vector>

#include "coral/impl/join.hpp"
#include "coral/task.hpp"

namespace coral {

namespace detail {

// (What the children took becomes the task's once the whole value is made, or not at all; as a
// branch of another join, it stays with the result: see held_for_task. So does a received value:
// it stays lent until the whole value is made, and goes back to its channel if that throws.)
template <class... Tasks>
class when_all_awaiter final
    : public tuple_join_awaiter<join_kind::first_failure, Tasks...>,
      public join_value_resume<when_all_awaiter<Tasks...>, std::tuple<join_value_t<typename Tasks::value_type>...>,
                               any_held_v<typename Tasks::value_type...>> {
  using base = tuple_join_awaiter<join_kind::first_failure, Tasks...>;
  using value_type = std::tuple<join_value_t<typename Tasks::value_type>...>;

 public:
  using base::base;

  value_type make_value(held_shares* into) { return make_value(into, std::index_sequence_for<Tasks...>{}); }

 private:
  template <std::size_t... I>
  value_type make_value(held_shares* into, std::index_sequence<I...> indices) {
    if (auto failed = this->decided_branch(); failed >= 0)
      this->rethrow_if_failed(static_cast<std::size_t>(failed), indices);
    once_made confirm{[this] { (this->template result<I>().confirm_taken(), ...); }};
    return {take_join_value(this->template result<I>(), into)...};
  }
};

template <class Task>
class when_all_vector_awaiter final
    : public vector_join_awaiter<join_kind::first_failure, Task>,
      public join_value_resume<when_all_vector_awaiter<Task>, std::vector<join_value_t<typename Task::value_type>>,
                               held_for_task<typename Task::value_type>> {
  using base = vector_join_awaiter<join_kind::first_failure, Task>;
  using value_type = std::vector<join_value_t<typename Task::value_type>>;

 public:
  using base::base;

  value_type make_value(held_shares* into) {
    if (auto failed = this->decided_branch(); failed >= 0)
      this->result(static_cast<std::size_t>(failed)).take_or_rethrow();
    once_made confirm{[this] {
      for (std::size_t i = 0; i < this->size(); ++i) this->result(i).confirm_taken();
    }};
    value_type values;
    values.reserve(this->size());
    for (std::size_t i = 0; i < this->size(); ++i) values.push_back(take_join_value(this->result(i), into));
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
