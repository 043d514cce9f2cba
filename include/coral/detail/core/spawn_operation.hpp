#pragma once

#include <atomic>
#include <boost/asio/bind_allocator.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "coral/detail/core/allocated.hpp"
#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/context_gate.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/core/promise_base.hpp"
#include "coral/detail/core/ref_counted.hpp"
#include "coral/detail/core/result_segment.hpp"
#include "coral/detail/join/task_awaiter.hpp"

namespace coral::detail {

// The completion signature of a task as an asynchronous operation (spawn with a token).
template <class T>
struct spawn_signature {
  using type = void(std::exception_ptr, T);
};
template <>
struct spawn_signature<void> {
  using type = void(std::exception_ptr);
};
template <class T>
using spawn_signature_t = typename spawn_signature<T>::type;

// A task or a callable returning one.
template <class A>
concept task_source = is_task_v<std::remove_cvref_t<A>> || is_task_v<std::remove_cvref_t<std::invoke_result_t<A&>>>;

template <class A>
struct task_of {
  using type = std::remove_cvref_t<A>;
};
template <class A>
requires(!is_task_v<std::remove_cvref_t<A>>) struct task_of<A> {
  using type = std::remove_cvref_t<std::invoke_result_t<A&>>;
};
template <class A>
using task_of_t = typename task_of<A>::type;

// A spawned task's root segment, made and not started yet: the reference a segment is made with
// (its running chain's, see task_segment) and the caller's, taken here. start() lets the chain
// run; if the root goes before it started (an exception between making and starting it: an
// allocation, a callable), the frame is destroyed unstarted, the job ends with that exception
// (its callbacks run: a completion handler or a group hears it) and both references go.
template <class T>
class unstarted_root {
 public:
  // (The running chain's reference stays the segment's own; the caller's is taken here.)
  explicit unstarted_root(result_segment<T>* segment) noexcept : segment_(segment) {}
  unstarted_root(unstarted_root&& other) noexcept : segment_(std::move(other.segment_)), started_(other.started_) {}
  unstarted_root& operator=(unstarted_root&&) = delete;
  ~unstarted_root() {
    if (segment_ && !started_) segment_->discard(std::current_exception());
  }

  result_segment<T>* operator->() const noexcept { return segment_.get(); }
  result_segment<T>* get() const noexcept { return segment_.get(); }

  // Posts the task's start to its executor (never inline: spawn() runs no task code).
  void start() {
    segment_->start();
    started_ = true;
  }
  // The caller's reference, for a job handle to adopt (once started).
  result_segment<T>* release() noexcept { return segment_.release(); }

 private:
  counted_ref<result_segment<T>> segment_;
  bool started_ = false;
};

// Creates the root of a spawned task, not started yet. If the callable, the record or an
// allocation throws, nothing is left behind (no state, no frame, no outstanding work).
// `cancellable`: whether anything will be able to cancel the task (a job handle, a slot).
// `where`: where it was spawned, for its record (coral::dump_tasks).
template <class Source>
auto make_root(asio::any_io_executor executor, Source&& source, bool cancellable, const code_location& where) {
  using task_type = task_of_t<Source>;
  using T = typename task_type::value_type;
  static_assert(!held_for_task<T>,
                "coral::spawn / sync_wait / task_group: this task's result holds a std-style lock or permit "
                "(`m.lock() && work()`, `with_timeout(1s, m.lock())`), which only a task can hold: await it inside "
                "a task of your own, or take the lock in the scoped style (m.scoped_lock())");
  // (Until it is attached, the task's frame, if any, is the source's own; once attached, the
  // segment's, freed with it: the last reference of a segment never started destroys its frame.)
  std::unique_ptr<result_segment<T>, drop_reference<object_references>> made;
  if constexpr (is_task_v<std::remove_cvref_t<Source>>) {
    if (!source.valid()) throw std::logic_error("coral::spawn: the task is empty (moved from or already started)");
    made.reset(new result_segment<T>(place(bound_executor<task_type>().value_or(std::move(executor)), cancellable)));
    made->attach(task_type(std::move(source)).release());
  } else {
    using F = std::remove_cvref_t<Source>;
    auto* state = new factory_root_segment<T, F>(
        place(bound_executor<task_type>().value_or(std::move(executor)), cancellable), std::forward<Source>(source));
    made.reset(state);
    task_type t = state->make_task();
    if (!t.valid()) throw std::logic_error("coral::spawn: the callable returned an empty task");
    made->attach(t.release());
  }
  made->start_record(nullptr, where);
  return unstarted_root<T>(made.release());
}

// Installed in the completion handler's cancellation slot: emitting it cancels the task, as with
// asio::co_spawn (so spawned tasks work in asio::experimental::parallel_group and the like).
template <class T>
class spawn_cancellation {
 public:
  explicit spawn_cancellation(result_segment<T>* state) noexcept : state_(state) {}
  void operator()(asio::cancellation_type) const {
    if (!state_->done()) state_->cancel();
  }

 private:
  counted_ref<result_segment<T>> state_;
};

// Dispatches `f` to `executor` with the memory of `allocator`. A handler without an allocator of
// its own (std::allocator) leaves it to Asio, which then recycles per-thread memory.
template <class Executor, class Allocator, class F>
void dispatch_with(const Executor& executor, const Allocator& allocator, F&& f) {
  if constexpr (std::is_same_v<Allocator, std::allocator<void>>) {
    asio::dispatch(executor, std::forward<F>(f));
  } else {
    asio::dispatch(executor, asio::bind_allocator(allocator, std::forward<F>(f)));
  }
}

// A spawn's completion handler while its task runs: a member of the gate of the handler's context.
// Whoever claims it first has the handler: the task's end (which dispatches it), or that context's
// shutdown (which destroys it then, while the context exists: destroying a handler may post to
// its executor, as an asio::awaitable's does). Allocated with the handler's allocator.
template <class Handler, class Work, class Allocator>
class pending_completion final : public gate_member {
 public:
  pending_completion(Handler h, Work w, const Allocator& a)
      : handler(std::move(h)), work(std::move(w)), allocator_(a) {}

  std::optional<Handler> handler;
  std::optional<Work> work;

  void abandon() noexcept override {
    handler.reset();
    work.reset();
  }

  static pending_completion* make(Handler h, Work w, const Allocator& allocator) {
    return create_with_allocator<pending_completion>(allocator, std::move(h), std::move(w), allocator);
  }

 private:
  void destroy_self() noexcept override { destroy_with_allocator(allocator_, this); }

  Allocator allocator_;
};

// The task's reference to its pending completion: if the task goes without ending (its own
// context shut down), the handler is destroyed here, unless that of the handler's context has.
template <class Pending>
class pending_reference {
 public:
  // (Takes over the reference `p` was made with.)
  pending_reference(Pending* p, std::shared_ptr<context_gate> gate) noexcept : p_(adopt(p)), gate_(std::move(gate)) {}
  pending_reference(pending_reference&&) noexcept = default;
  pending_reference& operator=(pending_reference&&) = delete;
  ~pending_reference() {
    if (!p_) return;
    gate_->claim(
        *p_, [this] { p_->abandon(); }, [this] { p_->abandon(); });
  }
  Pending& operator*() const noexcept { return *p_; }
  context_gate& gate() const noexcept { return *gate_; }

 private:
  counted_ref<Pending> p_;
  std::shared_ptr<context_gate> gate_;
};

struct initiate_spawn {
  template <class Handler, class Source>
  void operator()(Handler handler, asio::any_io_executor executor, Source source, code_location where) const {
    using T = typename task_of_t<Source>::value_type;
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto root = make_root(executor, std::move(source), slot.is_connected(), where);
    auto* state = root.get();
    if (slot.is_connected()) slot.template emplace<spawn_cancellation<T>>(state);
    // As with any Asio operation, the pending completion is outstanding work on the handler's
    // executor, and the handler runs there; its slot is cleared there too, where its owner uses it.
    // The work travels with the dispatched completion and ends there. The dispatch goes through
    // the gate of the handler's context: once the handler has run, its owner may destroy that
    // context, which then waits for the dispatch to return.
    auto work =
        asio::prefer(asio::get_associated_executor(handler, executor), asio::execution::outstanding_work.tracked);
    auto gate = gate_of(asio::query(work, asio::execution::context));
    // Coral's own memory for the operation (the handler's keeping and its dispatch) comes from the
    // handler's associated allocator, as for any Asio operation.
    auto allocator = asio::get_associated_allocator(handler);
    using pending_type = pending_completion<Handler, decltype(work), decltype(allocator)>;
    auto* pending = pending_type::make(std::move(handler), std::move(work), allocator);
    // (A context already shutting down takes no completion: its handler goes now, unrun.)
    if (!gate->link(*pending)) pending->abandon();
    // If the task cannot be started (an allocation fails), the exception leaves this initiating
    // function, as Asio's do, and the handler goes unrun: nothing is left outstanding.
    auto unrun = [pending, &gate = *gate] {
      gate.claim(
          *pending, [&] { pending->abandon(); }, [&] { pending->abandon(); });
    };
    state->when_done(
        [pending = pending_reference<pending_type>(pending, std::move(gate)), slot,
         allocator](result_segment<T>& s) mutable {
          // The handler observes the outcome, even asio::detached, which asks for it to be
          // dropped (silent, as co_spawn's).
          s.mark_observed();
          std::exception_ptr error;
          if (s.result().has_exception()) {
            // Handed over, not shared, when the handler observes it (see task_result::release).
            error = std::exchange(s.result().exception_ref(), nullptr);
          }
          std::conditional_t<std::is_void_v<T>, std::monostate, T> value{};
          if constexpr (!std::is_void_v<T>) {
            static_assert(std::is_default_constructible_v<T>,
                          "coral::spawn with a completion token needs a default-constructible result type (it is "
                          "passed, default-constructed, along with the exception when the task fails)");
            if (!error) value = s.result().take();
          }
          s.result().clear();  // what is left of it goes before the handler can run
          auto& p = *pending;
          pending.gate().claim(
              p,
              [&] {
                // A dispatch that cannot allocate (a strand behind an any_io_executor allocates in
                // Asio's prefer and dispatch) has nowhere to deliver: the handler and its work go
                // here, unrun, inside the pass, and the exception is reported as a callback's.
                try {
                  auto target = asio::prefer(*p.work, asio::execution::outstanding_work.untracked);
                  dispatch_with(target, allocator,
                                [h = std::move(*p.handler), slot, error = std::move(error), v = std::move(value),
                                 w = std::move(*p.work)]() mutable {
                                  if (slot.is_connected()) slot.clear();
                                  if constexpr (std::is_void_v<T>) {
                                    static_cast<void>(v);  // a std::monostate: a task<void> has no value
                                    std::move(h)(error);
                                  } else {
                                    std::move(h)(error, std::move(v));
                                  }
                                });
                } catch (...) {
                  p.abandon();
                  throw;
                }
                p.abandon();  // (moved from)
              },
              // The handler's context is being destroyed: the handler goes unrun, as Asio
              // destroys the handlers of a context that shuts down.
              [&] { p.abandon(); });
        },
        allocator);
    // Started only now: the completion cannot run inside this initiating function.
    try {
      root.start();
    } catch (...) {
      unrun();
      throw;
    }
  }
};

template <class Handler>
inline constexpr bool is_awaitable_op_handler_v = false;
template <class Signature, class Executor>
inline constexpr bool is_awaitable_op_handler_v<asio::detail::awaitable_async_op_handler<Signature, Executor>> = true;

}  // namespace coral::detail
