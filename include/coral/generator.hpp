#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <ranges>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "coral/detail/core/config.hpp"
#include "coral/detail/core/invoke_direct.hpp"
#include "coral/detail/generator/generator_promise.hpp"

namespace coral {

// A lazy, synchronous sequence written as a coroutine with co_yield (Kotlin's sequence {}, C++23's
// std::generator), with the blog series' interface on top:
//
//   generator<int> fibonacci() { int a = 0, b = 1; for (;;) { co_yield a; a = std::exchange(b, a + b); } }
//
//   while (g.has_next()) use(g.next());           // next() throws std::out_of_range at the end
//   for (int v : g) ...                           // an input range: std::views work on it too
//   co_yield elements_of(other_generator());      // nesting, in place
//   std::move(g).map(f) / flat_map(f) / filter(p) / take(n) / take_while(p)   -> generator
//   g.for_each(f); g.fold(init, f); g.sum();
//   generator<T>::from(a, b, c); generator<T>::from({a, b, c}); generator<T>::from(range);
//
// Semantics:
// - Lazy: nothing in the body runs before the first value is asked for (has_next(), next(),
//   begin()), and the body runs only up to the co_yield of the value asked for.
// - Values are not copied. co_yield of an rvalue or of a non-const lvalue hands the consumer a
//   reference to that object, which stays valid until the consumer asks for the next value: each
//   element is a T&& (generator<T>), so the consumer may move from it (next() and a by-value
//   range-for do) — a body that yields one of its variables must not rely on its value after the
//   co_yield. The one copy: co_yield of a const lvalue into a generator<T> of values copies it
//   (yield std::move(x), or use generator<const T&>, to avoid it). T may be move-only.
// - generator<T&> and generator<const T&> hand out references (T& / const T&) to what the body
//   yields; next() then returns that reference.
// - An exception thrown by the body propagates out of the call that asked for the next value
//   (has_next(), next(), begin(), ++it, a transform's or terminal operation's pull); the generator
//   has then ended.
// - co_yield elements_of(g) runs the generator g (an rvalue of the same type) in place: its values
//   go straight to this generator's consumer, without a resume per nesting level; its exception
//   propagates out of the co_yield. elements_of of any other input range (a generator lvalue or of
//   another type, a container, a view) yields its elements one by one; an lvalue range must stay
//   alive until the co_yield completes.
// - However deeply generators nest (elements_of) or chain (transforms), the stack does not grow:
//   every frame is resumed from one loop in the consumer's call (g++ does not make symmetric
//   transfer a tail call at -O0 or under sanitizers, so coral does not rely on it). Destroying such
//   a chain does not recurse either.
// - Transforms (map, flat_map, filter, take, take_while) take the generator over (call them on an
//   rvalue: std::move(g).map(f)) and return a new lazy generator that pulls from it; a function or
//   predicate is stored in the new generator's frame and runs on the consumer's thread, inside the
//   call that asked for a value. map and flat_map pass each element as a reference (T&&: a
//   function taking its argument by value moves it out); predicates see a non-modifiable lvalue.
//   map's result is constructed in place and lives until the next value is asked for. take(n) and
//   take_while(p) stop pulling as soon as they are done: the upstream never computes a value
//   nobody asked for. An exception thrown by a function or predicate propagates as the body's do.
// - for_each, fold and sum consume the rest of the generator; their function is called where the
//   body yields each value (an exception it throws propagates out of them, not into the body).
// - generator<T> is a std::ranges::input_range, not a view (libstdc++ 12 cannot pipe an lvalue of
//   a move-only view): std::views take an lvalue by reference and a temporary by owning it.
// - Destroying an unfinished generator destroys its frames (innermost first) without running them
//   further; destructors of their locals run.
// - A default-constructed or moved-from generator is empty.
//
// Thread safety: distinct objects: safe. Shared objects: unsafe (a generator is consumed by one
// caller at a time; it may be handed to another thread between calls).
template <class T>
class [[nodiscard]] CORAL_CORO_RETURN_TYPE generator {
  static_assert(!std::is_void_v<T> && !std::is_rvalue_reference_v<T> && !std::is_const_v<T>,
                "coral::generator<T>: T is a value type (generator<int>), T& or const T&");

 public:
  using promise_type = detail::generator_promise<T>;
  using value_type = std::remove_cvref_t<T>;
  // What each element is handed out as: T&& for a generator of values, T for one of references.
  using reference = typename promise_type::reference;
  // An input iterator over the elements, as begin() returns it.
  // Thread safety: distinct objects: safe. Shared objects: unsafe.
  class iterator;

  generator() noexcept = default;
  generator(generator&& other) noexcept : top_(std::exchange(other.top_, nullptr)) {}
  generator& operator=(generator&& other) noexcept;
  ~generator() {
    if (top_) detail::destroy_stream(top_);
  }

  // The blog series' interface. has_next(): whether there is a next value, running the body up to
  // it if needed. next(): that value (moved out of what the body yielded; for a generator of
  // references, the reference); throws std::out_of_range once the generator has ended.
  bool has_next();
  std::conditional_t<std::is_reference_v<T>, T, value_type> next();

  // The range interface: begin() runs the body up to the first value.
  iterator begin();
  std::default_sentinel_t end() const noexcept { return {}; }

  // Transforms: each returns a new lazy generator that owns this one (left empty).
  // map: a generator<U> of f(x), U being what f returns (a value, or a reference).
  template <std::invocable<reference> F>
  CORAL_CORO_CONSUMING_WRAPPER auto map(F f) && {
    return map_body<detail::map_element_t<F, reference>>(upstream(release()), std::move(f));
  }
  // flat_map: f(x) returns a coral::generator<U>; all their elements, in order.
  template <std::invocable<reference> F>
  CORAL_CORO_CONSUMING_WRAPPER auto flat_map(F f) && {
    return flat_map_body<detail::flat_map_result_t<F, reference>>(upstream(release()), std::move(f));
  }
  // filter: the elements for which p(x) is true.
  template <std::predicate<const value_type&> P>
  CORAL_CORO_CONSUMING_WRAPPER generator filter(P p) && {
    return predicate_body<false>(upstream(release()), std::move(p));
  }
  // take: the first n elements.
  CORAL_CORO_CONSUMING_WRAPPER generator take(std::size_t n) && { return take_body(upstream(release()), n); }
  // take_while: the elements before the first one for which p(x) is false.
  template <std::predicate<const value_type&> P>
  CORAL_CORO_CONSUMING_WRAPPER generator take_while(P p) && {
    return predicate_body<true>(upstream(release()), std::move(p));
  }

  // Terminal operations: they consume the rest of the generator. If f throws, the element it was
  // given is consumed and the exception propagates; the generator continues after that element.
  template <class F>
  void for_each(F f)  // f(x) for each element
      requires std::invocable<F, reference>;
  template <class A, class F>
  A fold(A initial, F f);  // acc = f(std::move(acc), x) for each element, from acc = initial
  value_type sum();        // fold with +=, from a value-initialised value_type

  // Factories. from(a, b, ...): the values, stored in the generator (copied from lvalues, moved
  // from rvalues). from({a, b, ...}): copied from the list (a std::initializer_list's elements are
  // const). from(range): the elements of any input range; an rvalue range is stored in the
  // generator and its elements are moved out, an lvalue range must outlive the generator and, for a
  // generator of values, each element is copied when it is asked for (it stays in the range).
  // (Constrained by trailing requires-clauses: clang 14 matches an out-of-line definition to its
  // declaration only then, when the constraint names a member of the class.)
  template <class... A>
  CORAL_CORO_CONSUMING_WRAPPER static generator from(A&&... values) requires(std::convertible_to<A, value_type>&&...);
  CORAL_CORO_CONSUMING_WRAPPER static generator from(std::initializer_list<value_type> values);
  // (An lvalue range is a reference the generator keeps: clang's lifetime checks follow it. An
  // rvalue range is taken over.)
  template <class R>
  CORAL_CORO_WRAPPER static generator from(R& range) requires detail::range_of<R&, value_type>;
  template <class R>
  CORAL_CORO_CONSUMING_WRAPPER static generator from(R&& range) requires(!std::is_lvalue_reference_v<R> &&
                                                                         detail::range_of<R, value_type>);

 private:
  friend promise_type;
  template <class>
  friend class detail::generator_promise;
  template <class>
  friend class generator;
  using object = typename promise_type::object;
  using upstream = detail::upstream<object>;

  explicit generator(detail::generator_frame* top) noexcept : top_(top) {}
  detail::generator_frame* release() noexcept { return std::exchange(top_, nullptr); }

  template <class U, class F>
  static generator<U> map_body(upstream up, F f);
  template <class G, class F>
  static G flat_map_body(upstream up, F f);
  template <bool EndAtRejected, class P>
  static generator predicate_body(upstream up, P p);
  static generator take_body(upstream up, std::size_t n);
  template <class R>
  static generator from_body(R range);

  // The top frame of this generator's stream (null: empty).
  detail::generator_frame* top_ = nullptr;
};

// co_yield elements_of(r) in a generator body yields every element of r (see generator).
// elements_of(x) refers to x; it is meant to be used within the co_yield expression.
// Thread safety: distinct objects: safe. Shared objects: unsafe.
template <class R>
struct elements_of {
  // (A constructor, not aggregate initialisation from parentheses, which clang 14 lacks.)
  elements_of(R r) : range(std::forward<R>(r)) {}
  R range;
};
template <class R>
elements_of(R&&) -> elements_of<R&&>;

// ---- implementation

template <class T>
class generator<T>::iterator {
 public:
  using value_type = generator::value_type;
  using difference_type = std::ptrdiff_t;

  iterator() noexcept = default;

  reference operator*() const noexcept { return static_cast<reference>(*static_cast<object*>(top_->value)); }
  iterator& operator++() {
    top_->value = nullptr;
    detail::advance_stream(*top_);
    return *this;
  }
  void operator++(int) { ++*this; }
  friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept { return !it.top_ || !it.top_->value; }

 private:
  friend generator;
  explicit iterator(detail::generator_frame* top) noexcept : top_(top) {}
  detail::generator_frame* top_ = nullptr;
};

template <class T>
generator<T>& generator<T>::operator=(generator&& other) noexcept {
  if (this != &other) {
    if (top_) detail::destroy_stream(top_);
    top_ = std::exchange(other.top_, nullptr);
  }
  return *this;
}

template <class T>
bool generator<T>::has_next() {
  if (!top_) return false;
  if (!top_->value && !top_->self.done()) detail::advance_stream(*top_);
  return top_->value != nullptr;
}

template <class T>
auto generator<T>::next() -> std::conditional_t<std::is_reference_v<T>, T, value_type> {
  if (!has_next()) throw std::out_of_range("coral::generator::next(): the generator has no more values");
  return static_cast<reference>(*static_cast<object*>(std::exchange(top_->value, nullptr)));
}

template <class T>
auto generator<T>::begin() -> iterator {
  has_next();
  return iterator(top_);
}

// map, filter, take and take_while run as stages (see detail/generator/generator_stages.hpp): step() gets
// each upstream value where the upstream yields it and says what goes on to this generator's
// consumer.
template <class T>
template <class U, class F>
generator<U> generator<T>::map_body(upstream up, F f) {
  if constexpr (std::is_reference_v<std::invoke_result_t<F&, reference>>) {
    auto step = [&f](object& x, const auto& stage) {
      auto&& referred = std::invoke(f, static_cast<reference>(x));  // lives where f's result refers
      return stage.pass(detail::erase_object(referred));
    };
    co_await up.stage(step);
  } else {
    detail::stage_value<U> result;
    auto step = [&](object& x, const auto& stage) {
      return stage.pass(detail::erase_object(result.emplace(detail::invoke_in_place<U, reference, F, object>{f, x})));
    };
    co_await up.stage(step);
  }
}

template <class T>
template <class G, class F>
G generator<T>::flat_map_body(upstream up, F f) {
  while (object* x = co_await up.pull()) co_yield elements_of(detail::invoke_direct(f, static_cast<reference>(*x)));
}

// filter (skips a rejected value) and take_while (ends at it).
template <class T>
template <bool EndAtRejected, class P>
generator<T> generator<T>::predicate_body(upstream up, P p) {
  auto step = [&p](object& x, const auto& stage) {
    if (std::invoke(p, std::as_const(x))) return stage.pass(detail::erase_object(x));
    return EndAtRejected ? stage.stop() : stage.skip();
  };
  co_await up.stage(step);
}

template <class T>
generator<T> generator<T>::take_body(upstream up, std::size_t n) {
  if (n == 0) co_return;
  auto step = [&n](object& x, const auto& stage) { return stage.pass(detail::erase_object(x), --n == 0); };
  co_await up.stage(step);
}

template <class T>
template <class F>
void generator<T>::for_each(F f) requires std::invocable<F, reference> {
  if (!has_next()) return;
  // The value already waiting (has_next() ran the body up to it), then the rest pushed to f where
  // it is yielded.
  std::invoke(f, static_cast<reference>(*static_cast<object*>(std::exchange(top_->value, nullptr))));
  struct sink : detail::generator_sink {
    explicit sink(F& function) noexcept : generator_sink(&take), f(function) {}
    F& f;
    static detail::sink_step take(detail::generator_sink& self, void* value) noexcept {
      try {
        std::invoke(static_cast<sink&>(self).f, static_cast<reference>(*static_cast<object*>(value)));
        return {detail::sink_step::carry_on};
      } catch (...) {
        self.failure = std::current_exception();
        return {detail::sink_step::suspend};
      }
    }
  } to_f(f);
  detail::push_all(*top_, to_f);
}

template <class T>
template <class A, class F>
A generator<T>::fold(A initial, F f) {
  A acc = std::move(initial);
  for_each([&](reference x) { acc = std::invoke(f, std::move(acc), static_cast<reference>(x)); });
  return acc;
}

template <class T>
auto generator<T>::sum() -> value_type {
  value_type total{};
  for_each([&](reference x) { total += static_cast<reference>(x); });
  return total;
}

template <class T>
template <class... A>
generator<T> generator<T>::from(A&&... values) requires(std::convertible_to<A, value_type>&&...) {
  using values_type = std::array<value_type, sizeof...(A)>;
  return from_body<values_type>(values_type{value_type(std::forward<A>(values))...});
}

template <class T>
generator<T> generator<T>::from(std::initializer_list<value_type> values) {
  return from_body<std::vector<value_type>>(std::vector<value_type>(values));
}

template <class T>
template <class R>
generator<T> generator<T>::from(R& range) requires detail::range_of<R&, value_type> {
  return from_body<R&>(range);
}

template <class T>
template <class R>
generator<T> generator<T>::from(R&& range) requires(!std::is_lvalue_reference_v<R> && detail::range_of<R, value_type>) {
  return from_body<R>(std::move(range));
}

// R is an lvalue reference (the caller's range) or a range type stored in the frame.
template <class T>
template <class R>
generator<T> generator<T>::from_body(R range) {
  using element = std::ranges::range_reference_t<R>;
  // An element the generator owns (of a range stored here, not of a view) is moved out; an
  // element of someone else's range is copied for a generator of values, whose consumer may move.
  constexpr bool owned = !std::is_reference_v<R> && !std::ranges::view<R>;
  for (auto&& x : range) {
    if constexpr (!std::is_lvalue_reference_v<element>) {
      co_yield std::forward<decltype(x)>(x);
    } else if constexpr (owned && !std::is_reference_v<T>) {
      co_yield std::move(x);
    } else if constexpr (!std::is_reference_v<T>) {
      co_yield std::as_const(x);
    } else {
      co_yield x;
    }
  }
}

}  // namespace coral
