#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/core/config.hpp"
#include "coral/detail/core/promise_base.hpp"

namespace coral {

template <class T>
class async_generator;

namespace detail {

// The machinery behind coral::async_generator. Like generator<T>'s, it never relies on symmetric
// transfer being a tail call (g++ 12 does not make it one at -O0, -O1 or under sanitizers), so
// that no chain of async generators grows the stack, however long:
//
// - Control passes between an async generator and its consumer (next() awaited; a value, or the
//   end, handed over) through handoff loops on this thread. The coroutine that suspends names the
//   one to resume next and returns to the loop that resumed it, which resumes that one; a
//   coroutine that was not resumed by a loop (a body resumed by its executor after a wait, a
//   task awaiting next()) starts a loop of its own.
// - A consumer awaiting next() starts a loop of its own, nested in the one it runs in, that ends
//   as soon as control comes back to it: it then carries on without having suspended, as cheaply
//   as a plain call. Only a few such loops nest on a thread (max_nested_handoff_loops); beyond
//   them, a consumer resumed by the innermost loop suspends and names its generator to that loop.
//   So the first transforms of a chain cost no more than calls, and the rest of the chain, however
//   long, takes turns in one loop at a constant depth.
// - A transform owns the generator it pulls from, so destroying a chain's last frame destroys the
//   one before it, and so on: the upstream of a transform being destroyed is set aside and
//   destroyed right after it (see destroy_async_generator), one frame after the other.

// How many handoff loops a consumer may nest on a thread by awaiting next(): enough for the usual
// chain of a few transforms, few enough that they take a small, fixed part of any thread's stack.
inline constexpr unsigned max_nested_handoff_loops = 8;

// A handoff loop: the coroutine it resumed last, and the one to resume next.
struct handoff_loop {
  void* running;                           // the frame address of the coroutine resumed last
  std::coroutine_handle<> next = nullptr;  // null: the loop returns
  unsigned depth = 1;                      // how many loops are running on this thread, this one included
};

// The innermost handoff loop running on this thread.
inline constinit thread_local handoff_loop* tls_handoff_loop = nullptr;

// Resumes `first` in a new loop nested in `outer`, then whoever is named next, until nobody is,
// or until control comes back to `stop_at` (which is then not resumed: its caller continues it).
// Returns whether control came back to `stop_at`.
inline bool run_handoffs(handoff_loop* outer, std::coroutine_handle<> first,
                         std::coroutine_handle<> stop_at = nullptr) noexcept {
  handoff_loop loop{first.address(), nullptr, outer ? outer->depth + 1 : 1};
  tls_handoff_loop = &loop;
  first.resume();
  std::coroutine_handle<> next = loop.next;
  while (next && next != stop_at) {
    loop.next = nullptr;
    loop.running = next.address();
    next.resume();
    next = loop.next;
  }
  tls_handoff_loop = outer;
  return next && next == stop_at;
}

// A loop of its own for a coroutine that gives control away without having been resumed by one:
// rare on the path of a value, kept out of it.
CORAL_NOINLINE inline void start_handoffs(handoff_loop* outer, std::coroutine_handle<> first) noexcept {
  run_handoffs(outer, first);
}

// `from`, suspending, gives control to `to`: through the loop that resumed `from` if there is
// one (returning to it now), else in a loop of its own. `from`'s frame may be gone on return.
inline void hand_off(std::coroutine_handle<> from, std::coroutine_handle<> to) noexcept {
  handoff_loop* const loop = tls_handoff_loop;
  if (loop && loop->running == from.address()) [[likely]] {
    loop->next = to;
    return;
  }
  start_handoffs(loop, to);
}

// `consumer`, awaiting a value, gives control to `generator`. Returns whether the consumer
// suspends: false when the value (or the end) came back to it in the loop it started.
inline bool hand_off_and_wait(std::coroutine_handle<> consumer, std::coroutine_handle<> generator) noexcept {
  handoff_loop* const loop = tls_handoff_loop;
  if (loop && loop->depth > max_nested_handoff_loops && loop->running == consumer.address()) {
    loop->next = generator;
    return true;
  }
  return !run_handoffs(loop, generator, consumer);
}

// What every async generator frame has, whatever its value type.
struct async_generator_frame {
  std::coroutine_handle<> self;
  // A transform's frame: the frame of the generator it pulls from, which it owns.
  async_generator_frame* upstream = nullptr;
};

// The innermost destruction of async generator frames on this thread: the frame being destroyed,
// and its upstream once set aside (a transform owns one upstream).
struct frame_destruction {
  const async_generator_frame* being_destroyed = nullptr;
  async_generator_frame* set_aside = nullptr;
};
inline constinit thread_local frame_destruction* tls_frame_destruction = nullptr;

// Destroys an async generator's frame. The upstream of a transform whose frame is being destroyed
// is set aside and destroyed once that frame is gone (nothing upstream refers into a transform's
// frame), so that a chain of transforms is destroyed in a loop. Any other frame is destroyed on
// the spot, with whatever it owns, before this returns: a body's locals may be referred to by
// the generators it owns, which must go first.
inline void destroy_async_generator(async_generator_frame* frame) noexcept {
  if (frame_destruction* d = tls_frame_destruction; d && d->being_destroyed->upstream == frame) {
    d->set_aside = frame;
    return;
  }
  frame_destruction destruction;
  frame_destruction* const outer = std::exchange(tls_frame_destruction, &destruction);
  do {
    destruction.being_destroyed = frame;
    frame->self.destroy();
    frame = std::exchange(destruction.set_aside, nullptr);
  } while (frame);
  tls_frame_destruction = outer;
}

// How an async_generator's owner destroys its frame (see unique_coroutine).
struct destroy_async_generator_frame {
  template <class Promise>
  void operator()(std::coroutine_handle<Promise> frame) const noexcept {
    destroy_async_generator(&frame.promise());
  }
};

template <class T>
class async_generator_promise : public promise_base, public async_generator_frame {
 public:
  async_generator_promise() noexcept { self = std::coroutine_handle<async_generator_promise>::from_promise(*this); }

  async_generator<T> get_return_object() noexcept;

  // Hands the value (or the end) to the consumer, resuming it through a handoff loop: without
  // suspending it when the body got there within the loop the consumer's next() ran.
  struct yield_to_consumer {
    async_generator_promise* promise;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> body) const noexcept {
      hand_off(body, promise->continuation());  // the consumer may destroy this frame: nothing after
    }
    void await_resume() const noexcept {}
  };
  // A copy of a yielded lvalue, kept in the frame while the consumer takes it.
  struct yield_copy_to_consumer : yield_to_consumer {
    T copy;
    void await_suspend(std::coroutine_handle<> body) noexcept {
      this->promise->value_ = std::addressof(copy);
      yield_to_consumer::await_suspend(body);
    }
  };

  yield_to_consumer yield_value(T&& value) noexcept {
    value_ = std::addressof(value);
    return {this};
  }
  yield_copy_to_consumer yield_value(const T& value) requires std::is_copy_constructible_v<T> {
    return {{this}, value};
  }
  yield_to_consumer final_suspend() noexcept { return {this}; }

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
}  // namespace coral
