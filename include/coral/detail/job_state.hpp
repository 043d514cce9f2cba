#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <utility>

#include "coral/detail/promise.hpp"
#include "coral/detail/task_context.hpp"
#include "coral/detail/task_result.hpp"

namespace coral::detail {

template <class T>
class job_state;

// Something to run once the job has ended (a then/catching/finally callback, a completion
// handler, a blocked waiter).
template <class T>
struct job_callback {
  virtual void run(job_state<T>& state) = 0;
  // Frees the callback with the allocator it came from.
  virtual void destroy() noexcept = 0;
  job_callback* next = nullptr;

 protected:
  ~job_callback() = default;
};

template <class T>
struct job_callback_deleter {
  void operator()(job_callback<T>* callback) const noexcept { callback->destroy(); }
};
template <class T>
using job_callback_ptr = std::unique_ptr<job_callback<T>, job_callback_deleter<T>>;

// `f` in memory from `Allocator` (a completion handler's associated allocator, say).
template <class T, class F, class Allocator>
struct job_callback_fn final : job_callback<T> {
  using allocator_type = typename std::allocator_traits<Allocator>::template rebind_alloc<job_callback_fn>;

  static job_callback_ptr<T> make(F f, const Allocator& allocator) {
    allocator_type a(allocator);
    job_callback_fn* p = std::allocator_traits<allocator_type>::allocate(a, 1);
    try {
      std::allocator_traits<allocator_type>::construct(a, p, std::move(f), a);
    } catch (...) {
      std::allocator_traits<allocator_type>::deallocate(a, p, 1);
      throw;
    }
    return job_callback_ptr<T>(p);
  }

  job_callback_fn(F f, const allocator_type& a) : f(std::move(f)), allocator(a) {}
  void run(job_state<T>& state) override { f(state); }
  void destroy() noexcept override {
    allocator_type a(allocator);
    std::allocator_traits<allocator_type>::destroy(a, this);
    std::allocator_traits<allocator_type>::deallocate(a, this, 1);
  }

  F f;
  allocator_type allocator;
};

void report_unobserved_exception(const std::exception_ptr& e) noexcept;
void report_callback_exception(const std::exception_ptr& e) noexcept;

// The root segment of a spawned task and the state shared with its job<T> handles: owns the
// outermost frame while it runs, then holds the result and runs the callbacks registered on the
// job. When the job reports done, nothing of the task touches any execution context any more
// (the segment has left its context before the callbacks run).
template <class T>
class job_state : public task_context {
 public:
  using frame_type = std::coroutine_handle<task_promise<T>>;

  explicit job_state(placement where) : task_context(std::move(where)) {}

  // Makes `frame` the segment's outermost coroutine (its result goes to this state).
  void attach(frame_type frame) noexcept {
    frame_ = frame;
    frame_.promise().run_as_root(*this);
    frame_.promise().set_result_storage(result_);
  }
  // Starts the attached frame through the executor (never inline: spawn() runs no task code).
  void start() { asio::post(executor(), resume_handler{frame_, keep_alive(this)}); }
  // Starts the attached frame here (the caller runs on the executor).
  // (Not a new turn of the executor: the caller's turn goes on.)
  void start_here() {
    keep_alive keep(this);
    frame_.resume();
  }

  void complete() noexcept override {
    std::exchange(frame_, nullptr).destroy();
    end();
  }

  // Ends the job without ever running its task (the attached frame is destroyed unstarted): it
  // ends with no result, and lets go of the reference a running segment would have held.
  void discard() noexcept {
    std::exchange(frame_, nullptr).destroy();
    end();
    this->release();
  }

  bool done() const noexcept { return callbacks_.load(std::memory_order_acquire) == ended(); }

  // Runs `f(state)` once the job has ended: right here if it already has, otherwise on the thread
  // that ends it. Lock-free: a callback is pushed unless the job has ended. `f` is kept in memory
  // from `allocator`.
  template <class F, class Allocator = std::allocator<void>>
  void when_done(F f, const Allocator& allocator = {}) {
    auto callback = job_callback_fn<T, F, Allocator>::make(std::move(f), allocator);
    job_callback<T>* head = callbacks_.load(std::memory_order_acquire);
    while (head != ended()) {
      callback->next = head;
      if (callbacks_.compare_exchange_weak(head, callback.get(), std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        callback.release();
        return;
      }
    }
    run_callback(*callback);
  }

  task_result<T>& result() noexcept { return result_; }
  // Whether the task was destroyed unfinished because its execution context shut down (its
  // result is then operation_aborted, which nobody needs to be told about). Read once it ended.
  bool abandoned() const noexcept { return abandoned_; }
  void mark_observed() noexcept { observed_.store(true, std::memory_order_relaxed); }
  // True for the first caller only: a move-only result can be taken once.
  bool claim_result() noexcept { return !taken_.exchange(true, std::memory_order_acq_rel); }

 protected:
  ~job_state() override {
    if (frame_) frame_.destroy();  // attached but never started (start() threw)
    if (result_.has_exception() && !observed_.load(std::memory_order_relaxed)) {
      report_unobserved_exception(result_.exception());
    }
  }

  // Runs when the task has ended, before the job's callbacks.
  virtual void on_end() noexcept {}

  void chain_released() noexcept override {
    if (!frame_) return;
    // Nothing can resume the task any more (its context shut down with the task suspended): free
    // the frames and fail the job. The task itself threw nothing: not an unobserved exception.
    mark_ended();
    std::exchange(frame_, nullptr).destroy();
    mark_observed();
    abandoned_ = true;
    result_.set_exception(std::make_exception_ptr(boost::system::system_error(
        asio::error::operation_aborted,
        "coral: the task was destroyed before it finished (its execution context shut down)")));
    end();
  }

 private:
  static job_callback<T>* ended() noexcept { return reinterpret_cast<job_callback<T>*>(&ended_marker); }

  void end() noexcept {
    mark_ended();
    leave_context();
    on_end();
    finish();
  }

  void finish() noexcept {
    job_callback<T>* newest_first = callbacks_.exchange(ended(), std::memory_order_acq_rel);
    job_callback<T>* oldest_first = nullptr;
    while (newest_first) oldest_first = std::exchange(newest_first, std::exchange(newest_first->next, oldest_first));
    while (oldest_first) {
      job_callback_ptr<T> callback(std::exchange(oldest_first, oldest_first->next));
      run_callback(*callback);
    }
  }

  void run_callback(job_callback<T>& callback) noexcept {
    try {
      callback.run(*this);
    } catch (...) {
      report_callback_exception(std::current_exception());
    }
  }

  static inline char ended_marker;

  frame_type frame_;
  task_result<T> result_;
  // The callbacks registered so far, newest first; ended() once the job has ended.
  std::atomic<job_callback<T>*> callbacks_{nullptr};
  std::atomic<bool> observed_{false};
  std::atomic<bool> taken_{false};
  bool abandoned_ = false;
};

// A job whose task comes from a callable (typically a capturing lambda): the callable lives here,
// so its captures outlive the task's frame.
template <class T, class F>
class factory_job_state final : public job_state<T> {
 public:
  factory_job_state(placement where, F factory) : job_state<T>(std::move(where)), factory_(std::move(factory)) {}
  auto make_task() { return factory_(); }

 private:
  F factory_;
};

}  // namespace coral::detail
