#pragma once

#include <functional>
#include <type_traits>
#include <utility>

#include "coral/detail/core/config.hpp"

namespace coral::detail {

// std::invoke, as a plain call where it can be one. With CORAL_CORO_LIFETIME_CHECKS, clang rejects
// every function that returns a task or a generator without being a coroutine or a marked
// wrapper, and the standard library's std::invoke is neither: user callables that may make one
// (produce's body, map's and flat_map's functions) are called through this.
template <class M, class O, class... A>
CORAL_CORO_CONSUMING_WRAPPER constexpr decltype(auto) invoke_member_function(M member, O&& object, A&&... a) {
  if constexpr (requires { (std::forward<O>(object).*member)(std::forward<A>(a)...); }) {
    return (std::forward<O>(object).*member)(std::forward<A>(a)...);
  } else if constexpr (requires { (object.get().*member)(std::forward<A>(a)...); }) {  // std::reference_wrapper
    return (object.get().*member)(std::forward<A>(a)...);
  } else {  // a pointer
    return ((*std::forward<O>(object)).*member)(std::forward<A>(a)...);
  }
}

template <class F, class... A>
CORAL_CORO_CONSUMING_WRAPPER constexpr decltype(auto) invoke_direct(F&& f, A&&... a) {
  if constexpr (std::is_member_function_pointer_v<std::remove_cvref_t<F>>) {
    return invoke_member_function(f, std::forward<A>(a)...);
  } else if constexpr (std::is_member_object_pointer_v<std::remove_cvref_t<F>>) {
    return std::invoke(std::forward<F>(f), std::forward<A>(a)...);  // (a data member: nothing is made)
  } else {
    return std::forward<F>(f)(std::forward<A>(a)...);
  }
}

// `invoke_direct(f, static_cast<Argument>(x))` for a constructor that calls what it is given to
// make its value in place (stage_value::emplace): a function object, since a lambda cannot be
// marked a wrapper in C++20.
template <class Result, class Argument, class F, class X>
struct invoke_in_place {
  F& f;
  X& x;
  CORAL_CORO_CONSUMING_WRAPPER Result operator()() const { return invoke_direct(f, static_cast<Argument>(x)); }
};

}  // namespace coral::detail
