#pragma once

#include <concepts>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <ranges>
#include <type_traits>
#include <utility>

#include "coral/detail/core/frame_allocator.hpp"
#include "coral/detail/generator/generator_stages.hpp"
#include "coral/detail/generator/generator_stream.hpp"

namespace coral {

template <class T>
class generator;
template <class R>
struct elements_of;

namespace detail {

// The promise of coral::generator, on the streams of generator_stream.hpp and the stages of
// generator_stages.hpp.

// The final suspension: a nested frame hands its stream back to the frame that nested it; a top
// returns to its consumer, or to the frame waiting for its next value or its end.
struct generator_final_awaiter {
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> coroutine) const noexcept {
    generator_frame& frame = coroutine.promise();
    if (frame.parent) {
      frame.root->leaf = frame.parent;
      tls_generator_next = frame.parent;
    } else if (generator_frame* waiting = frame.puller) {
      waiting->staged = nullptr;  // a stage on this stream ends with it
      tls_generator_next = waiting;
    }
  }
  void await_resume() const noexcept {}
};

template <class G>
inline constexpr bool is_generator_v = false;
template <class T>
inline constexpr bool is_generator_v<generator<T>> = true;

// What generator::map(f) yields: f's result, a value (by value, also for f returning U&&) or an
// lvalue reference.
template <class F, class Reference>
struct map_element {
  using result = std::invoke_result_t<F&, Reference>;
  static_assert(!std::is_void_v<result>, "coral::generator::map: the function must return a value");
  using type = std::conditional_t<std::is_lvalue_reference_v<result>, result, std::remove_cvref_t<result>>;
};
template <class F, class Reference>
using map_element_t = typename map_element<F, Reference>::type;

// What generator::flat_map(f) returns: the coral::generator f returns.
template <class F, class Reference>
struct flat_map_result {
  using type = std::remove_cvref_t<std::invoke_result_t<F&, Reference>>;
  static_assert(is_generator_v<type>, "coral::generator::flat_map: the function must return a coral::generator");
};
template <class F, class Reference>
using flat_map_result_t = typename flat_map_result<F, Reference>::type;

// What generator<V>::from(range) accepts: an input range whose elements convert to V (copied or
// moved).
template <class R, class V>
concept range_of = std::ranges::input_range<R> &&(std::convertible_to<std::ranges::range_reference_t<R>, V> ||
                                                  std::convertible_to<std::ranges::range_rvalue_reference_t<R>, V>);

// co_yield elements_of(x) in a generator<T>: x is nested in place when it is a generator<T> given
// up (an rvalue), element by element when it is any other input range.
template <class R, class T>
concept nests_in_place = std::same_as<std::remove_cvref_t<R>, generator<T>> && !std::is_lvalue_reference_v<R>;
template <class R, class T>
concept nests_element_by_element = std::ranges::input_range<std::remove_reference_t<R>> && !nests_in_place<R, T>;

template <class T>
class generator_promise : public generator_frame {
 public:
  // What the consumer gets for each value: T&& for a generator of values, T itself for a generator
  // of references.
  using reference = std::conditional_t<std::is_reference_v<T>, T, T&&>;
  using object = std::remove_reference_t<reference>;  // the type of a yielded object
  using value_type = std::remove_cvref_t<T>;
  static constexpr bool copies_const_lvalues = !std::is_reference_v<T> && std::copy_constructible<value_type>;

  generator_promise() noexcept { self = std::coroutine_handle<generator_promise>::from_promise(*this); }
  // Generator frames come from the same per-thread cache as task frames.
  static void* operator new(std::size_t size) { return allocate_frame(size); }
  static void operator delete(void* p, std::size_t size) noexcept { deallocate_frame(p, size); }

  generator<T> get_return_object() noexcept { return generator<T>(this); }
  std::suspend_always initial_suspend() const noexcept { return {}; }
  generator_final_awaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() noexcept { exception = std::current_exception(); }
  void return_void() const noexcept {}

  // co_yield of an lvalue: the consumer gets a reference to that very object.
  generator_yield_awaiter yield_value(object& value) noexcept { return {publish(*this, erase_object(value))}; }
  // co_yield of an rvalue into a generator of values: a reference to it (a temporary lives until
  // the frame resumes).
  generator_yield_awaiter yield_value(object&& value) noexcept requires(!std::is_reference_v<T>) {
    return {publish(*this, erase_object(value))};
  }
  // co_yield of a const lvalue into a generator of values: the consumer may move from what it
  // gets, so it gets a copy.
  yield_copy_awaiter<value_type> yield_value(const object& value) requires copies_const_lvalues {
    return {*this, value};
  }

  // co_yield elements_of(sub) with a generator of this type given up (an rvalue): sub runs in
  // place, in this frame's stream.
  template <nests_in_place<T> R>
  nest_awaiter yield_value(elements_of<R> nested) noexcept {
    return nest_awaiter(nested.range.release());
  }
  // co_yield elements_of(r) with any other input range (an lvalue generator, a generator of
  // another type, a container, a view): each element, as if yielded one by one. A generator is
  // pulled from as a transform pulls from its upstream, so that this too keeps the stack flat.
  template <nests_element_by_element<T> R>
  nest_awaiter yield_value(elements_of<R> nested) {
    if constexpr (is_generator_v<std::remove_cvref_t<R>>) {
      return nest_awaiter(pulled_elements(nested.range).release());
    } else {
      return nest_awaiter(range_elements<R>(std::forward<R>(nested.range)).release());
    }
  }

  // Inside generator bodies, only coral's transforms await (their upstream); these overloads are
  // more specialised than the one that refuses everything else.
  template <class O>
  pull_awaiter<O> await_transform(pull_awaiter<O> pull) const noexcept {
    return pull;
  }
  template <class O, class Step>
  stage_awaiter<O, Step> await_transform(stage_awaiter<O, Step> stage) const noexcept {
    return stage;
  }
  template <class A>
  A&& await_transform(A&& awaitable) const noexcept {
    static_assert(!sizeof(A*),
                  "a coral::generator body cannot co_await: it runs inside its consumer's call to has_next(), "
                  "next() or ++it (use co_yield; an asynchronous body needs an async generator)");
    return std::forward<A>(awaitable);
  }

 private:
  template <class G>
  static generator<T> pulled_elements(G& source) {
    using source_reference = typename G::reference;
    pull_awaiter<std::remove_reference_t<source_reference>> next(source.top_);
    while (auto* value = co_await next) co_yield static_cast<source_reference>(*value);
  }
  template <class R>
  static generator<T> range_elements(R range) {
    for (auto&& element : range) co_yield std::forward<decltype(element)>(element);
  }
};

}  // namespace detail
}  // namespace coral
