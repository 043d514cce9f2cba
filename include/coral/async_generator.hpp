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

#include "coral/detail/promise.hpp"

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
// - Destroying an unfinished async generator destroys its frame without running it further.
// - If the consumer's frame is destroyed while the body runs for it (the consumer's context shut
//   down while the body waited), the body's frame is destroyed with it, at that moment, while the
//   services its waits use still exist: the generator may outlive that context (it is then empty).
// - A default-constructed or moved-from async generator is empty; awaiting its next() throws
//   std::logic_error.
//
// Thread safety: one next() at a time. Between values, the generator may be handed to another
// task (on any executor): the body then continues as part of that task.
template <class T>
class async_generator;

namespace detail {

template <class T>
class async_generator_promise : public promise_base {
 public:
  async_generator<T> get_return_object() noexcept;

  // Hands the value (or the end) to the consumer: without suspending it when the body got there
  // within the consumer's next() on this thread, else by resuming it.
  struct hand_over {
    async_generator_promise* self;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) const noexcept {
      if (inline_start* mark = tls_inline_start; mark && mark->child == self) {
        mark->completed = true;
        return;
      }
      self->continuation().resume();  // the consumer may destroy this frame: nothing after
    }
    void await_resume() const noexcept {}
  };
  // A copy of a yielded lvalue, kept in the frame while the consumer takes it.
  struct hand_over_copy : hand_over {
    T copy;
    void await_suspend(std::coroutine_handle<> h) noexcept {
      this->self->value_ = std::addressof(copy);
      hand_over::await_suspend(h);
    }
  };

  hand_over yield_value(T&& value) noexcept {
    value_ = std::addressof(value);
    return {this};
  }
  hand_over_copy yield_value(const T& value) requires std::is_copy_constructible_v<T> { return {{this}, value}; }
  hand_over final_suspend() noexcept { return {this}; }

  void unhandled_exception() noexcept { exception_ = std::current_exception(); }
  void return_void() noexcept {}

  // After the hand-over: the value, nullopt at the end, or the body's exception (once).
  std::optional<T> take(bool ended) {
    if (exception_) std::rethrow_exception(std::exchange(exception_, nullptr));
    if (ended) return std::nullopt;
    return std::optional<T>(std::move(*value_));
  }

 private:
  T* value_ = nullptr;
  std::exception_ptr exception_;
};

}  // namespace detail

template <class T>
class [[nodiscard]] async_generator {
  static_assert(std::is_object_v<T> && !std::is_const_v<T>, "coral::async_generator<T>: T is a value type");

 public:
  using promise_type = detail::async_generator_promise<T>;
  using value_type = T;
  using handle_type = std::coroutine_handle<promise_type>;

  async_generator() noexcept = default;
  async_generator(async_generator&& other) noexcept : frame_(std::exchange(other.frame_, nullptr)) {}
  async_generator& operator=(async_generator&& other) noexcept {
    if (this != &other) {
      reset();
      frame_ = std::exchange(other.frame_, nullptr);
    }
    return *this;
  }
  ~async_generator() { reset(); }

  explicit operator bool() const noexcept { return static_cast<bool>(frame_); }

  // `co_await g.next()` in a coral task: the next value, or nullopt once the body has returned.
  class next_awaiter;
  next_awaiter next() noexcept { return next_awaiter(*this); }

  // map: an async_generator<U> of f(x), U being what f returns.
  template <class F>
  requires std::invocable<F&, T&&>
  auto map(F f) && {
    return map_body<std::remove_cvref_t<std::invoke_result_t<F&, T&&>>>(std::move(*this), std::move(f));
  }
  // filter: the values for which p(x) is true (p sees a non-modifiable lvalue).
  template <class P>
  requires std::predicate<P&, const T&> async_generator filter(P p) && {
    return filter_body(std::move(*this), std::move(p));
  }
  // take: the first n values at most.
  async_generator take(std::size_t n) && { return take_body(std::move(*this), n); }

 private:
  friend promise_type;
  explicit async_generator(handle_type frame) noexcept : frame_(frame) {}

  void reset() noexcept {
    if (auto f = std::exchange(frame_, nullptr)) f.destroy();
  }

  template <class U, class F>
  static async_generator<U> map_body(async_generator upstream, F f) {
    while (auto v = co_await upstream.next()) co_yield std::invoke(f, std::move(*v));
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

  handle_type frame_;
};

template <class T>
class async_generator<T>::next_awaiter {
 public:
  using coral_awaitable = void;

  // The consumer's frame is being destroyed while the body runs for it: the body can never hand a
  // value over. It ends now, not when the generator goes (maybe after the context its waits use).
  ~next_awaiter() {
    if (in_flight_) owner_->reset();
  }

  bool await_ready() const {
    if (!owner_->frame_) throw std::logic_error("coral: next() of an empty async_generator (moved from)");
    return owner_->frame_.done();
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> consumer) {
    task_context& context = consumer.promise().context();
    context.throw_if_cancelled();
    owner_->frame_.promise().run_inline(context, consumer);
    in_flight_ = true;
    return !detail::start_inline(owner_->frame_);
  }

  std::optional<T> await_resume() {
    in_flight_ = false;
    return owner_->frame_.promise().take(owner_->frame_.done());
  }

 private:
  friend async_generator;
  explicit next_awaiter(async_generator& owner) noexcept : owner_(&owner) {}
  using task_context = detail::task_context;

  async_generator* owner_;
  bool in_flight_ = false;
};

template <class T>
async_generator<T> detail::async_generator_promise<T>::get_return_object() noexcept {
  return async_generator<T>(std::coroutine_handle<async_generator_promise>::from_promise(*this));
}

}  // namespace coral
