#pragma once

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <utility>
#include <variant>

#include "coral/detail/asio.hpp"
#include "coral/detail/executors.hpp"

namespace coral::detail {

class task_root;

// What every coroutine of one spawned chain shares: the executor it resumes on, the
// cancellation slot its current suspension point listens to, and the root that owns the chain.
// Children awaited inline point at their parent's context; a child started on another executor
// gets a context of its own (same slot, same root).
struct task_context {
  asio::any_io_executor executor;
  asio::cancellation_slot slot;
  task_root* root = nullptr;
};

// The owner of a spawned chain of coroutines. Two counts:
//  - keep-alive references: held by whatever will resume the chain next (a posted
//    handler, a pending Asio operation, a foreign awaitable). When none is left the chain can never
//    run again, so its frames are destroyed: this is how destroying an io_context with suspended
//    tasks frees them.
//  - object references: job handles plus one for the chain itself; the root is deleted at zero.
class task_root {
 public:
  explicit task_root(asio::any_io_executor executor) : context_{std::move(executor), signal_.slot(), this} {
    track_work();
  }
  task_root(const task_root&) = delete;
  task_root& operator=(const task_root&) = delete;

  task_context& context() noexcept { return context_; }
  const asio::any_io_executor& executor() const noexcept { return context_.executor; }

  void add_keep_alive() noexcept { keep_alive_.fetch_add(1, std::memory_order_relaxed); }
  void release_keep_alive() noexcept {
    if (keep_alive_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      chain_released();
      release();
    }
  }

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Requests cancellation from any thread: the signal is emitted on the task's executor, where
  // the slot is used; suspension points started later see cancel_requested().
  void cancel() {
    cancel_requested_.store(true, std::memory_order_release);
    // The posted function holds a reference, released also if it is destroyed without running.
    add_ref();
    std::unique_ptr<task_root, released> self(this);
    asio::post(context_.executor, [self = std::move(self)] { self->signal_.emit(asio::cancellation_type::all); });
  }
  bool cancel_requested() const noexcept { return cancel_requested_.load(std::memory_order_acquire); }

  // The slot an operation should listen to. While no handle to the task exists (only the chain
  // references its root), nothing can ever cancel it, and operations are spared the cancellation
  // handler's memory.
  asio::cancellation_slot cancellation_slot() const noexcept {
    return refs_.load(std::memory_order_acquire) > 1 ? context_.slot : asio::cancellation_slot();
  }

  // Called from the final suspension of the chain's outermost coroutine.
  virtual void complete() noexcept = 0;

 protected:
  // As with asio::co_spawn, a running task counts as outstanding work on its executor: an
  // io_context's run() does not return while the task waits elsewhere (say, on a child posted
  // to a thread pool). Released once the task has ended.
  void release_work() noexcept { work_.template emplace<0>(); }

  virtual ~task_root() = default;
  // No keep-alive reference is left: destroy the frames if they did not complete.
  virtual void chain_released() noexcept = 0;

 private:
  using tracked_io_executor = std::decay_t<decltype(asio::prefer(std::declval<asio::io_context::executor_type>(),
                                                                 asio::execution::outstanding_work.tracked))>;

  // On an io_context (the common case) the work is tracked by a typed executor, which is much
  // smaller than a type-erased one.
  void track_work() {
    const auto& ex = context_.executor;
    if (auto* io = io_context_executor_of(ex)) {
      work_.template emplace<1>(asio::prefer(*io, asio::execution::outstanding_work.tracked));
    } else {
      work_.template emplace<2>(
          std::make_unique<asio::any_io_executor>(asio::prefer(ex, asio::execution::outstanding_work.tracked)));
    }
  }

  struct released {
    void operator()(task_root* root) const noexcept { root->release(); }
  };

  asio::cancellation_signal signal_;
  task_context context_;
  std::variant<std::monostate, tracked_io_executor, std::unique_ptr<asio::any_io_executor>> work_;
  std::atomic<std::uint32_t> keep_alive_{0};
  std::atomic<std::uint32_t> refs_{1};
  std::atomic<bool> cancel_requested_{false};
};

// A keep-alive reference to a chain.
class keep_alive {
 public:
  keep_alive() noexcept = default;
  explicit keep_alive(task_root* root) noexcept : root_(root) {
    if (root_) root_->add_keep_alive();
  }
  keep_alive(keep_alive&& other) noexcept : root_(std::exchange(other.root_, nullptr)) {}
  keep_alive& operator=(keep_alive&& other) noexcept {
    if (this != &other) {
      reset();
      root_ = std::exchange(other.root_, nullptr);
    }
    return *this;
  }
  ~keep_alive() { reset(); }
  void reset() noexcept {
    if (auto* r = std::exchange(root_, nullptr)) r->release_keep_alive();
  }

 private:
  task_root* root_ = nullptr;
};

// Resumes a suspended coroutine when invoked (through the executor it was posted to). If it is
// destroyed uninvoked, for example with its io_context, it lets go of the chain, which frees it.
struct resume_handler {
  std::coroutine_handle<> coroutine;
  keep_alive keep;

  void operator()() {
    auto k = std::move(keep);
    std::exchange(coroutine, nullptr).resume();
  }
};

// Resumes `coroutine` on the executor of `context` (inline when already there).
inline void resume_on(const task_context& context, std::coroutine_handle<> coroutine) {
  asio::dispatch(context.executor, resume_handler{coroutine, keep_alive(context.root)});
}

inline void throw_if_cancelled(const task_context& context) {
  if (context.root->cancel_requested()) {
    throw boost::system::system_error(asio::error::operation_aborted, "coral: the task was cancelled");
  }
}

}  // namespace coral::detail
