#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "coral/detail/generator/generator_stream.hpp"

namespace coral::detail {

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

// co_await inside a stage's body (see the overview in generator_stream.hpp): makes the frame the sink of its
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

}  // namespace coral::detail
