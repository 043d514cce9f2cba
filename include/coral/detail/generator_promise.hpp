#pragma once

#include <concepts>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <ranges>
#include <type_traits>
#include <utility>

#include "coral/detail/frame_allocator.hpp"

namespace coral {

template <class T>
class generator;
template <class R>
struct elements_of;

namespace detail {

// The machinery behind coral::generator. It never relies on symmetric transfer (g++ 12 does not
// make it a tail call at -O0 or under sanitizers), so that no chain of generators grows the stack:
//
// - A *stream* is what one consumer pulls from: its top frame (owned by a generator object, or by
//   a transform frame as its upstream) plus the frames nested into it with co_yield
//   elements_of(sub). Only the innermost of those, the stream's leaf, runs; a frame that finishes
//   hands the stream back to the frame that nested it.
// - flat_map, and elements_of of a range that is not nested in place, pull from their upstream
//   stream: the pulling frame suspends, the upstream's leaf is resumed, and when that leaf yields,
//   the pulling frame is resumed with the value.
// - map, filter, take and take_while run as stages: the transform's frame installs itself as the
//   upstream's sink and suspends until the upstream ends; each value the upstream yields goes
//   through the stage where it is yielded, and on to the transform's own consumer, without
//   resuming the transform's frame. A value goes down a chain of stages in a loop (publish()),
//   not in nested calls.
// - A terminal operation (for_each, fold, sum) installs a sink too: a value yielded into its
//   stream is handed to its function where it is yielded, and the body carries on without
//   suspending.
// - Every suspension of a generator frame returns to one loop, drive_stream(), on the consumer's
//   thread, after naming the frame to resume next (tls_generator_next: the nested frame, the
//   parent, the frame waiting for a value) or none (a value, or the end, is ready for the
//   consumer). A chain of a million nested generators or transforms therefore runs at a constant
//   stack depth.

struct generator_frame;

// What a sink did with a value yielded into its stream (two words: returned in registers).
struct sink_step {
  enum kind_type : std::uintptr_t {
    carry_on,   // taken: the yielding frame carries on
    suspend,    // the yielding frame suspends (the sink has named the frame to resume next, if any)
    pass,       // a stage passes `value` on, as yielded into its own stream
    pass_last,  // the same, and the stage is done: once the value has gone on, the stage ends
  } kind = carry_on;
  void* value = nullptr;
};

// Takes the values yielded into a stream, where they are yielded: a terminal operation, or a stage.
struct generator_sink {
  using take_function = sink_step (*)(generator_sink& sink, void* value) noexcept;
  explicit generator_sink(take_function take_value) noexcept : take(take_value) {}

  take_function take;
  generator_frame* stage = nullptr;  // a stage's frame (null: a terminal operation)
  std::exception_ptr failure;        // what the sink's function threw, for the sink's owner to rethrow
};

struct generator_frame {
  std::coroutine_handle<> self;  // this coroutine
  // The top frame of the stream this frame yields into: this frame, or (once nested with
  // elements_of) the top of the nesting stream.
  generator_frame* root = this;
  // The frame that nested this one (null: this frame is the top of its stream). On a top that
  // waits in the thread's list of streams to destroy, the next one in that list.
  generator_frame* parent = nullptr;
  // What the body threw, until the frame's consumer (or the frame that nested it) rethrows it.
  std::exception_ptr exception;
  // Set while this frame is a stage: the top of its upstream, whose leaf runs in its place.
  generator_frame* staged = nullptr;

  // Used on a stream's top only:
  generator_frame* leaf = this;       // the innermost frame: the one to resume for the next value
  generator_frame* puller = nullptr;  // the frame waiting for a value or for the end (null: the consumer)
  void* value = nullptr;              // the yielded object nobody has taken yet (null: none)
  generator_sink* sink = nullptr;     // the terminal operation or stage taking the values, if any
};

// The frame drive_stream() resumes next on this thread; null: return to the consumer.
inline constinit thread_local generator_frame* tls_generator_next = nullptr;

// The frame that runs for `frame`: a stage's upstream runs in its place.
inline generator_frame* frame_to_run(generator_frame* frame) noexcept {
  while (frame->staged) frame = frame->staged->leaf;
  return frame;
}

// Runs the stream whose top is `top` until a value is ready for its consumer or the stream ends.
// A generator body that consumes another generator runs a drive_stream() of its own, which
// returns before that body suspends: the loops nest as the bodies do, and each leaves the slot
// empty.
inline void drive_stream(generator_frame& top) {
  frame_to_run(top.leaf)->self.resume();
  while (generator_frame* next = tls_generator_next) {
    tls_generator_next = nullptr;
    frame_to_run(next)->self.resume();
  }
}

// Names the frame drive_stream() resumes next (writing only when there is one: a plain
// generator's consumer reads the slot once per value and nobody writes it).
inline void resume_next(generator_frame* frame) noexcept {
  if (frame) tls_generator_next = frame;
}

// drive_stream(), then the stream's exception (once) if it ended with one.
inline void advance_stream(generator_frame& top) {
  drive_stream(top);
  if (!top.value && top.exception) std::rethrow_exception(std::exchange(top.exception, nullptr));
}

// Destroys a stream: the frames nested into it first, innermost first (a nested body may refer
// to its parent's locals), then its top. Frames are destroyed one after the other, however deep
// the nesting.
inline void destroy_stream(generator_frame* top) noexcept {
  generator_frame* frame = top->leaf;
  while (frame != top) {
    generator_frame* parent = frame->parent;
    frame->self.destroy();
    frame = parent;
  }
  top->self.destroy();
}

inline constinit thread_local generator_frame* tls_streams_to_destroy = nullptr;
inline constinit thread_local bool tls_destroying_streams = false;

// Destroys a transform's upstream stream. Destroying a frame destroys its upstream, whose frame
// destroys its own upstream, and so on: so that a chain of a million transforms does not recurse a
// million times, an upstream met while streams are already being destroyed on this thread joins a
// list, which the outermost call works through. (An upstream never refers to the frames
// downstream of it, so the later destruction is safe.)
inline void destroy_upstream(generator_frame* top) noexcept {
  if (tls_destroying_streams) {
    top->parent = std::exchange(tls_streams_to_destroy, top);
    return;
  }
  tls_destroying_streams = true;
  destroy_stream(top);
  while (generator_frame* next = tls_streams_to_destroy) {
    tls_streams_to_destroy = next->parent;
    destroy_stream(next);
  }
  tls_destroying_streams = false;
}

// A yielded object, as the frames keep it: untyped (generator<T> casts it back).
template <class Object>
void* erase_object(Object& value) noexcept {
  return const_cast<std::remove_const_t<Object>*>(std::addressof(value));
}

// publish() once the sink of the stream has not simply taken the value: a stage passes values on
// to its own stream, down a chain of stages in a loop.
inline bool publish_on(generator_sink* sink, sink_step step) noexcept {
  generator_frame* finished = nullptr;  // the first stage that took its last value
  for (;;) {
    if (step.kind < sink_step::pass) {
      // A stage that has had its last value ends now if nobody waits for a value first.
      if (step.kind == sink_step::carry_on && finished) {
        tls_generator_next = finished;
        return true;
      }
      return step.kind == sink_step::suspend;
    }
    if (step.kind == sink_step::pass_last) {
      sink->stage->staged = nullptr;  // asked for its next value, it ends
      if (!finished) finished = sink->stage;
    }
    generator_frame& top = *sink->stage->root;
    if (!top.sink) {
      top.value = step.value;
      resume_next(top.puller);
      return true;
    }
    sink = top.sink;
    step = sink->take(*sink, step.value);
  }
}

// co_yield v: hands v to the stream's sink if it has one; otherwise hands the consumer (or the
// frame pulling from the stream) a pointer to v, which lives in the yielding frame until that
// frame is resumed. Returns whether the yielding frame suspends. Called before the frame suspends
// (nothing runs in between), so that the awaiter holds nothing but that answer.
inline bool publish(generator_frame& frame, void* value) noexcept {
  generator_frame& top = *frame.root;
  if (generator_sink* sink = top.sink) {
    const sink_step step = sink->take(*sink, value);
    return step.kind != sink_step::carry_on && publish_on(sink, step);
  }
  top.value = value;
  resume_next(top.puller);
  return true;
}

struct generator_yield_awaiter {
  bool suspend;
  bool await_ready() const noexcept { return !suspend; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  void await_resume() const noexcept {}
};

// co_yield of a const lvalue into a generator<T> of values: the consumer may move from what it
// gets, so it gets a copy, which lives here (in the yielding frame) until the frame resumes.
template <class V>
class yield_copy_awaiter {
 public:
  yield_copy_awaiter(generator_frame& frame, const V& value) : frame_(frame), copy_(value) {}
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<>) noexcept { return publish(frame_, &copy_); }
  void await_resume() const noexcept {}

 private:
  generator_frame& frame_;
  V copy_;
};

// Consumes the rest of the stream whose top is `top` through `sink` (see generator_sink); rethrows
// what the sink or the stream threw.
inline void push_all(generator_frame& top, generator_sink& sink) {
  if (top.self.done()) return;
  top.sink = &sink;
  drive_stream(top);
  top.sink = nullptr;
  if (sink.failure) std::rethrow_exception(std::exchange(sink.failure, nullptr));
  if (top.exception) std::rethrow_exception(std::exchange(top.exception, nullptr));
}

// co_yield elements_of(sub) for a generator `sub` of the same type, given up by its owner: sub's
// frames join the yielding frame's stream, and sub's leaf runs there until sub ends; then the
// yielding frame resumes here, frees sub's frame and rethrows what sub threw, if anything.
class nest_awaiter {
 public:
  explicit nest_awaiter(generator_frame* child) noexcept : child_(child) {}
  bool await_ready() const noexcept { return !child_ || child_->self.done(); }
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> parent) noexcept {
    nest_into(parent.promise());
  }
  void await_resume() {
    if (!child_) return;
    std::exception_ptr failure = std::exchange(child_->exception, nullptr);
    child_->self.destroy();
    if (failure) std::rethrow_exception(failure);
  }

 private:
  void nest_into(generator_frame& parent) noexcept {
    generator_frame& top = *parent.root;
    // sub may have been partly consumed already: its chain, from its leaf up, moves over.
    generator_frame* leaf = child_->leaf;
    for (generator_frame* frame = leaf;; frame = frame->parent) {
      frame->root = &top;
      if (frame == child_) break;
    }
    child_->parent = &parent;
    top.leaf = leaf;
    // A value sub yielded and nobody took comes first.
    if (void* pending = std::exchange(child_->value, nullptr); pending && publish(*leaf, pending)) return;
    tls_generator_next = leaf;
  }

  // Not owned: while nested, sub's frames belong to the stream (destroy_stream() frees them if the
  // stream is destroyed first); once sub has ended, await_resume() frees its frame.
  generator_frame* child_;
};

// co_await inside a transform's body: the next value of the upstream stream whose top is `top`, as
// a pointer to the object its leaf yielded (valid until the upstream is pulled again), or null
// once it has ended; rethrows what it threw.
template <class Object>
class pull_awaiter {
 public:
  explicit pull_awaiter(generator_frame* top) noexcept : top_(top) {}
  bool await_ready() const noexcept { return !top_ || top_->value || top_->self.done(); }
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> puller) const noexcept {
    top_->puller = &puller.promise();
    tls_generator_next = top_->leaf;
  }
  Object* await_resume() const {
    if (!top_) return nullptr;
    top_->puller = nullptr;
    if (void* value = std::exchange(top_->value, nullptr)) return static_cast<Object*>(value);
    if (top_->exception) std::rethrow_exception(std::exchange(top_->exception, nullptr));
    return nullptr;
  }

 private:
  generator_frame* top_;
};

// co_await inside a stage's body (see the top of this file): makes the frame the sink of its
// upstream, whose values go to step(Object&, stage_output&) where they are yielded, and suspends
// until the upstream ends or the stage stops; rethrows what the upstream or step threw.
template <class Object, class Step>
class stage_awaiter : public generator_sink {
 public:
  stage_awaiter(generator_frame* upstream, Step& step) noexcept
      : generator_sink(&take_value), up_(upstream), step_(step) {}
  bool await_ready() const noexcept { return !up_ || up_->self.done(); }
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> stage) noexcept {
    frame_ = &stage.promise();
    this->stage = frame_;
    up_->sink = this;
    up_->puller = frame_;  // resumed when the upstream ends
    frame_->staged = up_;
    // A value the upstream yielded and nobody took goes first.
    if (void* pending = std::exchange(up_->value, nullptr); pending && publish(*up_, pending)) return;
    tls_generator_next = frame_;  // which runs the upstream in its place
  }
  void await_resume() {
    if (!up_) return;
    up_->sink = nullptr;
    up_->puller = nullptr;
    if (frame_) frame_->staged = nullptr;
    if (failure) std::rethrow_exception(std::exchange(failure, nullptr));
    if (up_->exception) std::rethrow_exception(std::exchange(up_->exception, nullptr));
  }

  // What step returns.
  sink_step skip() const noexcept { return {}; }  // nothing for this value; the upstream carries on
  sink_step pass(void* value, bool last = false) const noexcept {
    return {last ? sink_step::pass_last : sink_step::pass, value};
  }
  sink_step stop() const noexcept {  // the stage ends without passing this value on
    frame_->staged = nullptr;
    tls_generator_next = frame_;
    return {sink_step::suspend};
  }

 private:
  static sink_step take_value(generator_sink& sink, void* value) noexcept {
    auto& self = static_cast<stage_awaiter&>(sink);
    try {
      return self.step_(*static_cast<Object*>(value), self);
    } catch (...) {
      self.failure = std::current_exception();
      return self.stop();
    }
  }

  generator_frame* up_;
  Step& step_;
  generator_frame* frame_ = nullptr;  // the stage's frame
};

// Where a map stage keeps the value its function returned until the consumer asks for the next
// one (constructed in place from the function's result: no move).
template <class V>
class stage_value {
 public:
  stage_value() noexcept {}
  stage_value(const stage_value&) = delete;
  stage_value& operator=(const stage_value&) = delete;
  ~stage_value() { reset(); }
  template <class Make>
  V& emplace(Make&& make) {
    reset();
    V* value = ::new (static_cast<void*>(&value_)) V(std::forward<Make>(make)());
    full_ = true;
    return *value;
  }

 private:
  void reset() noexcept {
    if (full_) {
      value_.~V();
      full_ = false;
    }
  }
  union {
    V value_;
  };
  bool full_ = false;
};

// A transform's upstream: owns the top of the stream it pulls from or stages on.
template <class Object>
class upstream {
 public:
  explicit upstream(generator_frame* top) noexcept : top_(top) {}
  upstream(upstream&& other) noexcept : top_(std::exchange(other.top_, nullptr)) {}
  upstream& operator=(upstream&&) = delete;
  ~upstream() {
    if (top_) destroy_upstream(top_);
  }
  pull_awaiter<Object> pull() const noexcept { return pull_awaiter<Object>(top_); }
  template <class Step>
  stage_awaiter<Object, Step> stage(Step& step) const noexcept {
    return {top_, step};
  }

 private:
  generator_frame* top_;
};

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
