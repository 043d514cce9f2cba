#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "coral/detail/core/segment_attachment.hpp"
#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

// `co_await a` of an asio::awaitable<T> in a task. An awaitable frame runs only on an awaitable
// thread (what asio::co_spawn makes), and making one per await costs a co_spawn: two frames, a
// post and a dispatch. So a segment starts a thread at its first await of an awaitable<T> (one
// per T: the thread awaits it as one awaitable awaits another, with no frame in between) and keeps
// it, parked between awaits. An await hands the thread its awaitable and resumes it right there,
// on the segment's executor (the thread's executor too): an awaitable that completes at once
// costs its own frame and a few branches; one that waits resumes the task through its executor.
//
// The thread's cancellation state is the task's, as the state of an awaitable thread is shared by
// every awaitable it awaits: cancelling the task while it waits reaches the awaitable's operation
// through the thread's cancellation slot, and what an awaitable sets (reset_cancellation_state,
// throw_if_cancelled) holds for the task's later awaits. (Once cancelled, a task stays cancelled:
// it awaits nothing more.) Destroyed with its context, a thread in the middle of an await lets go
// of the task, as an Asio operation's handler does.
//
// An operation whose initiation throws (a hand-written one, or async_wait when the timer queue
// cannot allocate) does not throw into the awaitable: Asio lets the exception out of whatever
// resumed the thread, and destroys the thread's frames through its executor. Where coral resumed
// it (the start of an await) the exception ends the await: the task gets it from co_await, and the
// segment forgets the thread (its next await starts another). Where a foreign handler resumed it
// (after the awaitable's first wait) the exception leaves that handler, as with co_spawn, and the
// task is let go with the frames. (Asio's initiations destroy the handler they were given when
// they throw; one that keeps it and throws is not supported.)

// One await on a thread: the typed awaiter below.
class bridged_await {
 public:
  // The awaiting task, held and resumed by the thread if the await did not end at once.
  suspended_task task;
  // The await's progress, shared by the task (which starts it) and the thread (which ends it).
  enum phase_t : unsigned char { running, task_suspended, ended };
  std::atomic<phase_t> phase{running};
  // Set if the await failed: the awaitable's exception, or the one its thread's resumption threw.
  std::exception_ptr error;

 protected:
  ~bridged_await() = default;
};

// Runs a resumption of a parked thread that was posted: on the thread's executor, run(context,
// resume, handler) is called, and resume(handler) resumes the thread (inside run, so that run sees
// what the resumption throws).
using posted_resumption_runner = void (*)(void* context, void (*resume)(void*), void* handler);

template <class Handler>
struct posted_resumption {
  Handler handler;
  posted_resumption_runner run;
  void* context;

  using executor_type = asio::associated_executor_t<Handler>;
  executor_type get_executor() const noexcept { return asio::get_associated_executor(handler); }
  using allocator_type = asio::associated_allocator_t<Handler>;
  allocator_type get_allocator() const noexcept { return asio::get_associated_allocator(handler); }

  void operator()() { run(context, &invoke, &handler); }

 private:
  static void invoke(void* h) { std::move (*static_cast<Handler*>(h))(); }
};

// The handler of a parked thread: the completion handler of the operation it waits on, kept in
// place (it is a pointer to the thread's frames: no allocation per park).
class parked_handler {
 public:
  parked_handler() noexcept = default;
  parked_handler(const parked_handler&) = delete;
  parked_handler& operator=(const parked_handler&) = delete;
  ~parked_handler() { reset(); }

  template <class Handler>
  void hold(Handler&& handler) {
    using H = std::decay_t<Handler>;
    static_assert(sizeof(H) <= sizeof(storage_) && alignof(H) <= alignof(std::max_align_t));
    ::new (static_cast<void*>(storage_)) H(std::forward<Handler>(handler));
    // The handler leaves the storage first, whatever is done with it: the thread may park in the
    // storage again before the call returns, and its frames (which hold the storage) may be
    // destroyed on another thread as soon as the handler lets go of them.
    take_ = [](void* p, use how, posted_resumption_runner run, void* context) {
      H h(std::move(*static_cast<H*>(p)));
      static_cast<H*>(p)->~H();
      if (how == use::invoke) {
        std::move(h)();
      } else if (how == use::post) {
        const auto executor = asio::get_associated_executor(h);
        asio::post(executor, posted_resumption<H>{std::move(h), run, context});
      }
    };
  }

  // Resumes the thread here.
  void invoke() { std::exchange(take_, nullptr)(storage_, use::invoke, nullptr, nullptr); }
  // Resumes the thread through its executor (the handler's associated executor), inside
  // run(context, ...) there.
  void post(posted_resumption_runner run, void* context) {
    std::exchange(take_, nullptr)(storage_, use::post, run, context);
  }
  // Lets go of the thread without resuming it: Asio destroys its frames on its executor.
  void reset() noexcept {
    if (take_) std::exchange(take_, nullptr)(storage_, use::destroy, nullptr, nullptr);
  }

 private:
  enum class use { invoke, post, destroy };
  alignas(std::max_align_t) unsigned char storage_[2 * sizeof(void*)];
  void (*take_)(void*, use, posted_resumption_runner, void*) = nullptr;
};

class awaitable_bridge;

// The bridge whose begin() runs on this thread now: an await that ends while this is its own
// bridge ended on the task's thread before the task could suspend. (An awaitable may also end on
// another thread: one that moved itself to another executor with bind_executor.)
inline constinit thread_local awaitable_bridge* bridge_in_begin = nullptr;

// What a thread is to its segment, whatever it awaits (one attachment per type of awaitable; its
// kind is the type of what it awaits).
class awaitable_bridge : public segment_attachment {
 public:
  // On the segment's executor: runs `a` on the thread, to its end or to its first wait.
  void begin(bridged_await& a) {
    if (!take_parked(a)) return;  // (handed over: the thread takes `a` from thread_state_)
    current_ = &a;
    struct mark {
      awaitable_bridge* outer;
      ~mark() { bridge_in_begin = outer; }
    } restore{std::exchange(bridge_in_begin, this)};
    resume_for(a, &invoke_parked, this);
  }

  // Then, unless `a` ended, with `a.task` holding the task: true if the thread resumes the task
  // when `a` ends (the task's cancellation reaches the awaitable meanwhile), false if it ended.
  bool suspend(bridged_await& a, task_segment& segment) {
    // (Nothing cancels a segment that runs on a multi-threaded executor without a strand, and
    // only such a segment could be resumed, on another thread, before this returns.)
    const bool listen = segment.op_slot().is_connected();
    if (listen) segment.slot().assign(forward_cancellation{this});
    if (a.phase.exchange(bridged_await::task_suspended, std::memory_order_acq_rel) != bridged_await::ended) {
      return true;
    }
    if (listen) segment.slot().clear();
    return false;
  }

  // The task has ended: a parked thread ends here, as a co_spawn ends (what it awaits returns, and
  // the thread returns), and destroys this object. Letting go of its parked handler instead would
  // have Asio destroy its frames through a post, from the handler's destructor, which ends the
  // program if the post cannot allocate. Ending it allocates too (co_spawn dispatches its
  // completion, coral's no-op, through the type-erased executor), but what that throws leaves the
  // thread with its frames destroyed and nothing else to do: no user code runs here, so nothing
  // else can throw, and nothing is lost. One that is not parked goes with the context.
  void task_ended() noexcept final {
    if (thread_state_.load(std::memory_order_acquire) != parked) return;
    thread_state_.store(busy, std::memory_order_relaxed);
    segment_.attachments().remove(*this);
    closing_ = true;
    try {
      parked_.invoke();
    } catch (...) {
    }
  }

  // The segment leaves its context: a parked thread goes (Asio destroys its frames on its
  // executor, this object with them); one still on its way to its park goes there, and one in an
  // await goes with the operation it waits on.
  void leave_context() noexcept final {
    std::uintptr_t word = busy;
    if (thread_state_.compare_exchange_strong(word, closed, std::memory_order_acq_rel)) return;
    if (word == parked) {
      thread_state_.store(busy, std::memory_order_relaxed);
      parked_.reset();
    }
  }

 protected:
  awaitable_bridge(const void* k, task_segment& segment) noexcept : segment_attachment(k), segment_(segment) {}
  // (Virtual: a bridge whose thread's frames were destroyed during a resumption is deleted by
  // the resumer, which knows it as a bridge only.)
  virtual ~awaitable_bridge() = default;

  asio::cancellation_slot cancellation_slot() noexcept { return signal_.slot(); }

  // The thread's wait for its next await.
  auto next_await() {
    return asio::async_initiate<const asio::deferred_t&, void()>(park_initiation{this}, asio::deferred);
  }

  // The thread's frames are being destroyed (its context is shutting down, or the handler that
  // held them went uninvoked): the task waiting in its await, if any, is let go, as an Asio
  // operation's handler destroyed uninvoked lets go. Unless that happens during a resumption of
  // the thread by the task's side (a failed initiation destroyed the handler, before the
  // exception reaches the resumer, or on another thread of the executor meanwhile): then the
  // resumer ends the await, and this object, which outlives the frames, is the resumer's to
  // delete (returns false).
  bool abandon() noexcept {
    if (resumer_.exchange(resumer::frames_gone, std::memory_order_acq_rel) == resumer::resuming) return false;
    if (std::exchange(in_await_, false)) current_->task.let_go();
    return true;
  }

  // On the thread, resumed from its park: whether it was resumed to end (the task has ended).
  bool closing() const noexcept { return closing_; }

  // On the thread, resumed from its park: the await it was resumed for.
  bridged_await& start_await() noexcept {
    in_await_ = true;
    return *current_;
  }

  // On the thread, `a` ended: it ends for the task once the thread is parked (the task's next
  // await then finds it parked).
  void end_await(bridged_await& a) noexcept {
    in_await_ = false;
    ending_ = &a;
  }

 private:
  // thread_state_: the thread is busy (starting, or in an await), parked, or else the await handed to it
  // while it was busy (a segment's first await, before the thread reached its park).
  // Or closed: the segment left its context while the thread was busy.
  static constexpr std::uintptr_t busy = 0;
  static constexpr std::uintptr_t parked = 1;
  static constexpr std::uintptr_t closed = 2;

  // resumer_: whether the task's side is resuming the thread now (begin(), or a handed-over
  // await's posted start), and what happened meanwhile that the resumer settles once the
  // resumption is over: the await ended (the thread parked; ending_to_publish_ is the await), or
  // the thread's frames were destroyed (abandon() left the await and this object to the resumer).
  // So the task does not go on past the await, nor start another resumption, before the resumer
  // is done with this object; and the await ends once, by one of them.
  enum class resumer : unsigned char { idle, resuming, await_ended, frames_gone };

  // On the task's executor: resumes the thread for `a` by resume(arg). An exception may come out
  // of it (an initiation in the awaitable threw), or the thread's frames may be destroyed
  // meanwhile: either way `a` ends here, with an exception. Nothing touches `a` or this object
  // after the resumption is over, unless this settles it.
  void resume_for(bridged_await& a, void (*resume)(void*), void* arg) {
    resumer_.store(resumer::resuming, std::memory_order_relaxed);
    std::exception_ptr escaped;
    try {
      resume(arg);
    } catch (...) {
      // (Settled once the handler is over: the task that settle() resumes drops the exception,
      // and the handler's end must not be the last, unsynchronised, use of it.)
      escaped = std::current_exception();
    }
    if (escaped) [[unlikely]] {
      // What settle() needs of this object is read first: unless the frames are gone already,
      // abandon() may destroy it once the exchange is made.
      task_segment& segment = segment_;
      const bool awaiting = forget_lost_thread();
      const resumer seen = resumer_.exchange(resumer::idle, std::memory_order_acq_rel);
      settle(a, segment, awaiting, seen, std::move(escaped));
      return;
    }
    const resumer seen = resumer_.exchange(resumer::idle, std::memory_order_acq_rel);
    // (Anything but `resuming` keeps this object: its frames are gone, or it is parked and the
    // task waits for the resumer to end the await.)
    if (seen != resumer::resuming) [[unlikely]]
      settle(a, segment_, seen == resumer::frames_gone && forget_lost_thread(), seen, nullptr);
  }

  // On the task's executor, a resumption over: true if the thread was still in its await, which
  // it can no longer end (its frames are gone, or going); then the segment forgets the thread,
  // and its next await starts another. (The task waits for the await: nothing else uses the
  // segment's attachments now.)
  bool forget_lost_thread() noexcept {
    const bool awaiting = std::exchange(in_await_, false);
    if (awaiting) segment_.attachments().remove(*this);
    return awaiting;
  }

  // What happened during a resumption for `a` (`seen`), settled once it is over. This object is
  // read only where `seen` keeps it: unless the frames are gone, it may be destroyed from the
  // moment the await ends (or, if the thread still waits in it, already).
  void settle(bridged_await& a, task_segment& segment, bool awaiting, resumer seen, std::exception_ptr escaped) {
    bridged_await* ended = seen == resumer::await_ended ? ending_to_publish_ : nullptr;
    if (seen == resumer::frames_gone) delete this;
    if (awaiting) {
      // The thread lost in `a`: `a` ends with the exception that left it, or operation_aborted if
      // its frames just went (the awaitable will never complete). The task stops forwarding
      // cancellation to the thread first, which may be gone before the task runs. (Here is the
      // task's executor, and one whose task forwards is serial; a task that does not forward
      // does not touch the slot meanwhile.)
      a.error = escaped ? std::move(escaped)
                        : std::make_exception_ptr(boost::system::system_error(asio::error::operation_aborted));
      segment.slot().clear();
      end_for_task(a);
    } else if (ended) {
      end_for_task(*ended);
    }
    // The exception left an await that had ended (an operation that completed inside its
    // initiation, then threw): it goes on, as Asio lets it.
    if (escaped) std::rethrow_exception(std::move(escaped));
  }

  // `a` ends: the task, if it has suspended, is resumed (posted, also where this is the task's
  // executor: resumed from here, the task could end and close the thread under its park); else it
  // goes on by itself.
  static void end_for_task(bridged_await& a) {
    if (a.phase.exchange(bridged_await::ended, std::memory_order_acq_rel) == bridged_await::task_suspended)
      a.task.resume_later();
  }

  static void invoke_parked(void* self) { static_cast<awaitable_bridge*>(self)->parked_.invoke(); }

  // A handed-over await's posted start, on the thread's executor (the task's).
  static void resume_posted(void* self, void (*resume)(void*), void* handler) {
    auto& bridge = *static_cast<awaitable_bridge*>(self);
    bridge.resume_for(*bridge.current_, resume, handler);
  }

  struct park_initiation {
    awaitable_bridge* self;
    template <class Handler>
    void operator()(Handler&& handler) const {
      self->park(std::forward<Handler>(handler));
    }
  };

  // A task takes every cancellation type: the awaitable gets them all, whatever its filters.
  struct forward_cancellation {
    awaitable_bridge* self;
    void operator()(asio::cancellation_type) const { self->signal_.emit(asio::cancellation_type::all); }
  };

  // On the task's side: true if the thread is parked (then it is the caller's to resume), else
  // `a` is left for the thread to take when it parks. (A parked thread touches nothing until it
  // is resumed; it parked before the task's previous await let the task go on.)
  bool take_parked(bridged_await& a) noexcept {
    if (thread_state_.load(std::memory_order_acquire) == parked) {
      thread_state_.store(busy, std::memory_order_relaxed);
      return true;
    }
    std::uintptr_t expected = busy;
    if (thread_state_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(&a),
                                              std::memory_order_acq_rel)) {
      return false;
    }
    thread_state_.store(busy, std::memory_order_relaxed);  // it parked meanwhile
    return true;
  }

  // On the thread, just suspended in next_await().
  template <class Handler>
  void park(Handler&& handler) {
    bridged_await* ended = std::exchange(ending_, nullptr);
    parked_.hold(std::forward<Handler>(handler));
    if (bridge_in_begin == this) {
      // (The task, on this thread, took it busy, and has not suspended.)
      thread_state_.store(parked, std::memory_order_relaxed);
      if (ended) ended->phase.store(bridged_await::ended, std::memory_order_relaxed);
      return;
    }
    std::uintptr_t word = busy;
    if (thread_state_.compare_exchange_strong(word, parked, std::memory_order_acq_rel)) {
      if (ended) publish_end(*ended);
      return;
    }
    thread_state_.store(busy, std::memory_order_relaxed);
    if (word == closed) {
      parked_.reset();
      if (ended) end_for_task(*ended);
    } else {
      // An await was handed over while the thread was busy (on its way to its first park; any
      // later await starts once the thread has parked): it starts on the task's executor.
      current_ = reinterpret_cast<bridged_await*>(word);
      in_await_ = true;
      parked_.post(&awaitable_bridge::resume_posted, this);
    }
  }

  // On the thread, parked: `a` ends, by the resumer if a resumption is in progress (the one that
  // started `a`: on this thread, or on the task's while `a` ended on another).
  void publish_end(bridged_await& a) {
    ending_to_publish_ = &a;
    resumer expected = resumer::resuming;
    if (resumer_.compare_exchange_strong(expected, resumer::await_ended, std::memory_order_acq_rel)) return;
    end_for_task(a);
  }

  task_segment& segment_;
  std::atomic<std::uintptr_t> thread_state_{busy};
  std::atomic<resumer> resumer_{resumer::idle};
  bool in_await_ = false;
  bool closing_ = false;
  bridged_await* current_ = nullptr;
  bridged_await* ending_ = nullptr;             // from end_await() to the park
  bridged_await* ending_to_publish_ = nullptr;  // left to the resumer (resumer::await_ended)
  parked_handler parked_;
  asio::cancellation_signal signal_;
};

template <class T>
class asio_awaitable_awaiter;

// The thread that awaits a segment's asio::awaitable<T>s.
template <class T>
class typed_awaitable_bridge final : public awaitable_bridge {
 public:
  static const char kind_tag;

  static typed_awaitable_bridge& start(task_segment& segment) {
    auto bridge = std::unique_ptr<typed_awaitable_bridge>(new typed_awaitable_bridge(segment));
    auto& self = *bridge;
    asio::co_spawn(segment.executor(), loop(std::move(bridge)),
                   asio::bind_cancellation_slot(self.cancellation_slot(), [](std::exception_ptr) noexcept {}));
    return self;
  }

 private:
  explicit typed_awaitable_bridge(task_segment& segment) noexcept : awaitable_bridge(&kind_tag, segment) {}

  static asio::awaitable<void> loop(std::unique_ptr<typed_awaitable_bridge> self) {
    typed_awaitable_bridge& bridge = *self;
    struct abandon_guard {
      std::unique_ptr<typed_awaitable_bridge>& self;
      ~abandon_guard() {
        if (!self->abandon()) static_cast<void>(self.release());  // (the resumer's to delete)
      }
    } guard{self};
    for (;;) {
      // The park must not throw if an await was cancelled (and must not read the cancellation
      // state: once the awaitable has moved itself to another executor, the task's thread may be
      // cancelling it): what the awaitables set is kept aside meanwhile.
      const bool throws = co_await asio::this_coro::throw_if_cancelled();
      co_await asio::this_coro::throw_if_cancelled(false);
      co_await bridge.next_await();
      if (bridge.closing()) co_return;
      co_await asio::this_coro::throw_if_cancelled(throws);
      auto& await = static_cast<asio_awaitable_awaiter<T>&>(bridge.start_await());
      try {
        if constexpr (std::is_void_v<T>) {
          co_await std::move(await.awaitable_);
          await.value_.emplace();
        } else {
          await.value_.emplace(co_await std::move(await.awaitable_));
        }
      } catch (...) {
        await.error = std::current_exception();
      }
      bridge.end_await(await);
    }
  }
};

template <class T>
const char typed_awaitable_bridge<T>::kind_tag = 0;

// The segment's thread for awaitable<T>s.
template <class T>
typed_awaitable_bridge<T>& awaitable_bridge_for(task_segment& segment) {
  using bridge = typed_awaitable_bridge<T>;
  if (auto* found = segment.attachments().find(&bridge::kind_tag)) [[likely]]
    return static_cast<bridge&>(*found);
  bridge& made = bridge::start(segment);
  segment.attachments().add(made);
  return made;
}

// The awaiter of `co_await a` in a task, for an asio::awaitable<T> on any_io_executor.
template <class T>
class asio_awaitable_awaiter final : public bridged_await {
 public:
  asio_awaitable_awaiter(asio::awaitable<T> a, task_segment& segment) noexcept
      : awaitable_(std::move(a)), segment_(segment) {}

  // The awaitable starts here, before the task suspends: most complete at once, and then the task
  // does not suspend at all.
  bool await_ready() {
    segment_.throw_if_cancelled();
    thread_ = &awaitable_bridge_for<T>(segment_);
    thread_->begin(*this);
    return phase.load(std::memory_order_acquire) == ended;
  }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    task.keep(coroutine);
    // (Set before the hand-over: once it is made, the task may be resumed on another thread.)
    suspended_ = true;
    if (thread_->suspend(*this, segment_)) return true;
    suspended_ = false;
    task.let_go();  // (the running segment holds its frames too)
    return false;
  }

  T await_resume() {
    // (The thread resumed the task by posting it: it forwarded cancellation until then.)
    if (suspended_) segment_.slot().clear();
    if (error) std::rethrow_exception(std::move(error));
    if constexpr (!std::is_void_v<T>) return std::move(*value_);
  }

 private:
  friend class typed_awaitable_bridge<T>;

  asio::awaitable<T> awaitable_;
  task_segment& segment_;
  awaitable_bridge* thread_ = nullptr;
  bool suspended_ = false;
  struct no_value {};
  std::optional<std::conditional_t<std::is_void_v<T>, no_value, T>> value_;
};

}  // namespace coral::detail
