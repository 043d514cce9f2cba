#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

namespace coral::detail {

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

}  // namespace coral::detail
