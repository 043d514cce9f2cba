#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "coral/detail/core/invoke_direct.hpp"
#include "coral/detail/core/unique_coroutine.hpp"
#include "coral/detail/generator/async_generator_promise.hpp"

namespace coral {

// A generator whose body may co_await (Kotlin's flow {}): sleeps, channel operations, use_task
// operations, child tasks. Consumed inside a coral task:
//
//   async_generator<int> ticks(int n) { for (int i = 0; i < n; ++i) { co_await sleep_for(10ms); co_yield i; } }
//
//   auto g = ticks(5);
//   while (auto v = co_await g.next()) use(*v);          // std::optional<T>; nullopt at the end
//   std::move(g).map(f) / filter(p) / take(n)            -> async_generator
//
// Semantics:
// - Lazy: nothing in the body runs before the first next() is awaited, and the body runs only up
//   to the co_yield of the value asked for.
// - It runs as part of the task awaiting next(), as an inherit task does: on that task's executor,
//   under its cancellation (a cancelled consumer's wait inside the body ends with
//   operation_aborted, as any of its waits would; a next() awaited by an already cancelled task
//   throws operation_aborted without running the body). A body value that is ready without
//   suspending is handed over without suspending the consumer.
// - co_yield of an rvalue moves it to the consumer; co_yield of an lvalue copies it (the body's
//   variable keeps its value). T may be move-only.
// - An exception thrown by the body is rethrown by the next() that was waiting for a value; the
//   generator has then ended and later next() calls return nullopt.
// - Transforms (map, filter, take) take the generator over (call them on an rvalue) and return a
//   new async generator pulling from it, in the consumer's task. take(n) stops pulling after n
//   values: the upstream never computes one nobody asked for.
// - The stack does not grow with the length of a chain of transforms, in any build (Debug and
//   sanitizers included): control passes between a generator and its consumer in a loop, not in
//   nested calls, whether the body's values are ready at once or come after a wait, and a chain
//   is destroyed one frame after the other.
// - Destroying an unfinished async generator destroys its frame without running it further.
// - If the consumer's frame is destroyed while the body runs for it (the consumer's context shut
//   down while the body waited), the body's frame is destroyed with it, at that moment, while the
//   services its waits use still exist: the generator may outlive that context (it is then empty).
// - A default-constructed or moved-from async generator is empty; awaiting its next() throws
//   std::logic_error.
//
// Thread safety: distinct objects: safe. Shared objects: unsafe (one next() at a time; between
// values the generator may be handed to another task, on any executor, and the body then
// continues as part of that task).
template <class T>
class async_generator;

template <class T>
class [[nodiscard]] CORAL_CORO_RETURN_TYPE async_generator {
  static_assert(std::is_object_v<T> && !std::is_const_v<T>, "coral::async_generator<T>: T is a value type");

 public:
  using promise_type = detail::async_generator_promise<T>;
  using value_type = T;
  using handle_type = std::coroutine_handle<promise_type>;

  async_generator() noexcept = default;
  async_generator(async_generator&&) noexcept = default;
  async_generator& operator=(async_generator&&) noexcept = default;

  explicit operator bool() const noexcept { return static_cast<bool>(frame_); }

  // `co_await g.next()` in a coral task: the next value, or nullopt once the body has returned.
  // Thread safety: distinct objects: safe. Shared objects: unsafe (awaited once, by one task).
  class next_awaiter;
  next_awaiter next() noexcept { return next_awaiter(*this); }

  // map: an async_generator<U> of f(x), U being what f returns.
  template <class F>
  requires std::invocable<F&, T&&> CORAL_CORO_CONSUMING_WRAPPER auto map(F f) && {
    detail::async_generator_frame* up = upstream_frame();
    return map_body<std::remove_cvref_t<std::invoke_result_t<F&, T&&>>>(std::move(*this), std::move(f))
        .pulling_from(up);
  }
  // filter: the values for which p(x) is true (p sees a non-modifiable lvalue).
  template <class P>
  requires std::predicate<P&, const T&> CORAL_CORO_CONSUMING_WRAPPER async_generator filter(P p) && {
    detail::async_generator_frame* up = upstream_frame();
    return filter_body(std::move(*this), std::move(p)).pulling_from(up);
  }
  // take: the first n values at most.
  CORAL_CORO_CONSUMING_WRAPPER async_generator take(std::size_t n) && {
    detail::async_generator_frame* up = upstream_frame();
    return take_body(std::move(*this), n).pulling_from(up);
  }

 private:
  friend promise_type;
  template <class>
  friend class async_generator;
  explicit async_generator(handle_type frame) noexcept : frame_(frame) {}

  detail::async_generator_frame* upstream_frame() noexcept { return frame_ ? &frame_.promise() : nullptr; }
  // A transform's frame records the frame it owns and pulls from (see destroy_async_generator).
  CORAL_CORO_CONSUMING_WRAPPER async_generator pulling_from(detail::async_generator_frame* up) && noexcept {
    frame_.promise().upstream = up;
    return std::move(*this);
  }

  template <class U, class F>
  static async_generator<U> map_body(async_generator upstream, F f) {
    while (auto v = co_await upstream.next()) co_yield detail::invoke_direct(f, std::move(*v));
  }
  template <class P>
  static async_generator filter_body(async_generator upstream, P p) {
    while (auto v = co_await upstream.next()) {
      if (std::invoke(p, std::as_const(*v))) co_yield std::move(*v);
    }
  }
  static async_generator take_body(async_generator upstream, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      auto v = co_await upstream.next();
      if (!v) co_return;
      co_yield std::move(*v);
    }
  }

  detail::unique_coroutine<promise_type, detail::destroy_async_generator_frame> frame_;
};

template <class T>
class async_generator<T>::next_awaiter {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::async_generator; }

  // The consumer's frame is being destroyed while the body runs for it: the body can never hand a
  // value over. It ends now, not when the generator goes (maybe after the context its waits use).
  ~next_awaiter() {
    if (in_flight_) owner_->frame_.reset();
  }

  bool await_ready() const {
    if (!owner_->frame_) throw std::logic_error("coral: next() of an empty async_generator (moved from)");
    return owner_->frame_.done();
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> consumer) {
    task_segment& segment = consumer.promise().segment();
    segment.throw_if_cancelled();
    const handle_type body = owner_->frame_.get();
    body.promise().run_inline(segment, consumer);
    in_flight_ = true;
    // Once the consumer has suspended, it may already have been resumed and this awaiter gone:
    // nothing may touch it after this call.
    return detail::hand_off_and_wait(consumer, body);
  }

  std::optional<T> await_resume() {
    in_flight_ = false;
    return owner_->frame_.promise().take(owner_->frame_.done());
  }

 private:
  friend async_generator;
  explicit next_awaiter(async_generator& owner) noexcept : owner_(&owner) {}
  using task_segment = detail::task_segment;

  async_generator* owner_;
  bool in_flight_ = false;
};

template <class T>
async_generator<T> detail::async_generator_promise<T>::get_return_object() noexcept {
  return async_generator<T>(std::coroutine_handle<async_generator_promise>::from_promise(*this));
}

}  // namespace coral

#include "coral/impl/await_transform.hpp"
