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

#include "coral/detail/segment_attachment.hpp"
#include "coral/detail/suspended_task.hpp"

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

// One await on a thread: the typed awaiter below.
class bridged_await {
 public:
  // The awaiting task, held and resumed by the thread if the await did not end at once.
  suspended_task task;
  // The await's progress, shared by the task (which starts it) and the thread (which ends it).
  enum phase_t : unsigned char { running, task_suspended, ended };
  std::atomic<phase_t> phase{running};

 protected:
  ~bridged_await() = default;
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
    take_ = [](void* p, use how) {
      H h(std::move(*static_cast<H*>(p)));
      static_cast<H*>(p)->~H();
      if (how == use::invoke) {
        std::move(h)();
      } else if (how == use::post) {
        const auto executor = asio::get_associated_executor(h);
        asio::post(executor, std::move(h));
      }
    };
  }

  // Resumes the thread here.
  void invoke() { std::exchange(take_, nullptr)(storage_, use::invoke); }
  // Resumes the thread through its executor (the handler's associated executor).
  void post() { std::exchange(take_, nullptr)(storage_, use::post); }
  // Lets go of the thread without resuming it: Asio destroys its frames on its executor.
  void reset() noexcept {
    if (take_) std::exchange(take_, nullptr)(storage_, use::destroy);
  }

 private:
  enum class use { invoke, post, destroy };
  alignas(std::max_align_t) unsigned char storage_[2 * sizeof(void*)];
  void (*take_)(void*, use) = nullptr;
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
    if (!take_parked(a)) return;  // (handed over: the thread takes `a` from word_)
    current_ = &a;
    struct mark {
      awaitable_bridge* outer;
      ~mark() { bridge_in_begin = outer; }
    } restore{std::exchange(bridge_in_begin, this)};
    parked_.invoke();
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

  // The segment leaves its context: a parked thread goes (Asio destroys its frames on its
  // executor, this object with them); one still on its way to its park goes there, and one in an
  // await goes with the operation it waits on.
  void leave_context() noexcept final {
    std::uintptr_t word = busy;
    if (word_.compare_exchange_strong(word, closed, std::memory_order_acq_rel)) return;
    if (word == parked) {
      word_.store(busy, std::memory_order_relaxed);
      parked_.reset();
    }
  }

 protected:
  explicit awaitable_bridge(const void* k) noexcept : segment_attachment(k) {}
  ~awaitable_bridge() = default;

  asio::cancellation_slot cancellation_slot() noexcept { return signal_.slot(); }

  // The thread's wait for its next await.
  auto next_await() {
    return asio::async_initiate<const asio::deferred_t&, void()>(park_initiation{this}, asio::deferred);
  }

  // The thread's frames are being destroyed (its context is shutting down): the task waiting in
  // its await, if any, is let go, as an Asio operation's handler destroyed uninvoked lets go.
  void abandon() noexcept {
    if (std::exchange(in_await_, false)) current_->task.let_go();
  }

  // On the thread, resumed from its park: the await it was resumed for.
  bridged_await& start_await() noexcept {
    in_await_ = true;
    return *current_;
  }

  // On the thread, `a` ended: unless that was on the task's thread within begin(), the task may
  // have suspended, to be resumed once the thread parks.
  void end_await(bridged_await& a) noexcept {
    in_await_ = false;
    if (bridge_in_begin == this) {
      a.phase.store(bridged_await::ended, std::memory_order_relaxed);
    } else if (a.phase.exchange(bridged_await::ended, std::memory_order_acq_rel) == bridged_await::task_suspended) {
      to_resume_ = &a;
    }
  }

 private:
  // word_: the thread is busy (starting, or in an await), parked, or else the await handed to it
  // while it was busy (a segment's first await, before the thread reached its park).
  // Or closed: the segment left its context while the thread was busy.
  static constexpr std::uintptr_t busy = 0;
  static constexpr std::uintptr_t parked = 1;
  static constexpr std::uintptr_t closed = 2;

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
    if (word_.load(std::memory_order_acquire) == parked) {
      word_.store(busy, std::memory_order_relaxed);
      return true;
    }
    std::uintptr_t expected = busy;
    if (word_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(&a), std::memory_order_acq_rel)) {
      return false;
    }
    word_.store(busy, std::memory_order_relaxed);  // it parked meanwhile
    return true;
  }

  // On the thread, just suspended in next_await().
  template <class Handler>
  void park(Handler&& handler) {
    bridged_await* resume = std::exchange(to_resume_, nullptr);
    parked_.hold(std::forward<Handler>(handler));
    std::uintptr_t word = busy;
    if (bridge_in_begin == this) {
      word_.store(parked, std::memory_order_relaxed);  // (the task, on this thread, took it busy)
    } else if (!word_.compare_exchange_strong(word, parked, std::memory_order_acq_rel)) {
      word_.store(busy, std::memory_order_relaxed);
      if (word == closed) {
        parked_.reset();
      } else {
        // An await was handed over while the thread was busy (on its way here from an await that
        // ended on another executor, or not started yet): it starts on the task's executor.
        current_ = reinterpret_cast<bridged_await*>(word);
        in_await_ = true;
        parked_.post();
      }
    }
    // (Posted, also where this is the task's executor: resumed from here, the task could end and
    // close the thread under its own park.)
    if (resume) resume->task.resume_later();
  }

  std::atomic<std::uintptr_t> word_{busy};
  bool in_await_ = false;
  bridged_await* current_ = nullptr;
  bridged_await* to_resume_ = nullptr;
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

  static typed_awaitable_bridge& start(const asio::any_io_executor& executor) {
    auto bridge = std::unique_ptr<typed_awaitable_bridge>(new typed_awaitable_bridge());
    auto& self = *bridge;
    asio::co_spawn(executor, loop(std::move(bridge)),
                   asio::bind_cancellation_slot(self.cancellation_slot(), [](std::exception_ptr) noexcept {}));
    return self;
  }

 private:
  typed_awaitable_bridge() noexcept : awaitable_bridge(&kind_tag) {}

  static asio::awaitable<void> loop(std::unique_ptr<typed_awaitable_bridge> self) {
    typed_awaitable_bridge& bridge = *self;
    struct abandon_guard {
      typed_awaitable_bridge& bridge;
      ~abandon_guard() { bridge.abandon(); }
    } guard{bridge};
    for (;;) {
      // The park must not throw if an await was cancelled (and must not read the cancellation
      // state: once the awaitable has moved itself to another executor, the task's thread may be
      // cancelling it): what the awaitables set is kept aside meanwhile.
      const bool throws = co_await asio::this_coro::throw_if_cancelled();
      co_await asio::this_coro::throw_if_cancelled(false);
      co_await bridge.next_await();
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
        await.error_ = std::current_exception();
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
  bridge& made = bridge::start(segment.executor());
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
    if (error_) std::rethrow_exception(std::move(error_));
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
  std::exception_ptr error_;
};

}  // namespace coral::detail
