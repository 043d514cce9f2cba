#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "coral/detail/core/allocated.hpp"
#include "coral/detail/core/config.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/core/inline_queue.hpp"
#include "coral/detail/core/promise_base.hpp"
#include "coral/detail/core/resumption_memory.hpp"
#include "coral/detail/core/task_result.hpp"
#include "coral/detail/core/task_segment.hpp"

namespace coral::detail {

template <class T>
class result_segment;

// Something to run once the job has ended (a then/catching/finally callback, a completion
// handler, a blocked waiter).
template <class T>
struct job_callback {
  virtual void run(result_segment<T>& state) = 0;
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
  static job_callback_ptr<T> make(F f, const Allocator& allocator) {
    return job_callback_ptr<T>(create_with_allocator<job_callback_fn>(allocator, std::move(f), allocator));
  }

  job_callback_fn(F f, const Allocator& a) : f(std::move(f)), allocator(a) {}
  void run(result_segment<T>& state) override { f(state); }
  void destroy() noexcept override { destroy_with_allocator(allocator, this); }

  F f;
  Allocator allocator;
};

// `note`: the exception's trace, when a tracked task failed with it.
void report_unobserved_exception(const std::exception_ptr& e, const failure_note* note = nullptr) noexcept;
void report_callback_exception(const std::exception_ptr& e) noexcept;

// Whether `e` is a boost::system::system_error with `code` (no exception is not).
inline bool has_error_code(const std::exception_ptr& e, const boost::system::error_code& code) noexcept {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const boost::system::system_error& error) {
    return error.code() == code;
  } catch (...) {
    return false;
  }
}

// Whether `e` is cancellation (a system_error with operation_aborted).
inline bool is_operation_aborted(const std::exception_ptr& e) noexcept {
  return has_error_code(e, asio::error::operation_aborted);
}

// What threads blocked in job::wait() sleep on: one per job, made by its first wait.
struct job_wait_signal {
  std::mutex mutex;
  std::condition_variable cv;
  bool ended = false;
};

// The root segment of a spawned task and the state shared with its job<T> handles: owns the
// outermost frame while it runs, then holds the result and runs the callbacks registered on the
// job. When the job reports done, nothing of the task touches any execution context any more
// (the segment has left its context before the callbacks run), every callback has run, and the
// result is destroyed by whoever lets go of it last among those that can see it: the last job
// handle to go once the job is done, never the task's thread afterwards.
template <class T>
class result_segment : public task_segment {
 public:
  using frame_type = std::coroutine_handle<task_promise<T>>;

  // The state of a spawned task, which a job handle may wait for.
  explicit result_segment(placement&& where) : task_segment(std::move(where)) {
    if (auto* strand = executor().template target<any_strand>()) own_strand_.emplace(*strand);
  }
  // The state of a child segment (a join's member, a child awaited on another executor): its
  // parent awaits it, no job handle waits for it, so it needs no look at its strand.
  struct child_segment_t {
    explicit child_segment_t() = default;
  };
  result_segment(placement&& where, child_segment_t) : task_segment(std::move(where)), read_in_place_(false) {}

  // Whether the calling thread is inside the strand the task runs on (an inline or new-thread
  // executor's): the task cannot go on until the caller returns. (Kept from the start: the
  // segment's executor may be dropped on another thread when the task ends.)
  bool strand_runs_in_this_thread() const noexcept { return own_strand_ && own_strand_->running_in_this_thread(); }

  // Makes `frame` the segment's outermost coroutine (its result goes to this state).
  void attach(frame_type frame) noexcept {
    frame_ = frame;
    frame_.promise().run_as_root(*this);
    frame_.promise().set_result_storage(result_);
  }
  // Starts the attached frame through the executor (never inline: spawn() runs no task code).
  // A keep-alive is held across the post: if the post fails (an allocation), the handler goes, and
  // its keep-alive with it, without ending the chain; the frame stays attached for discard().
  // (A post that throws must have queued nothing: see resumption_memory::post_unkept.)
  void start() {
    this->add_keep_alive();
    try {
      resumption_memory::post_unkept(executor(), this->executor_target_kind(), posted_resume{frame_, keep_alive(this)});
    } catch (...) {
      this->forget_unstarted_keep_alive();
      throw;
    }
    this->release_keep_alive();
  }
  // As start(), for a starter that cannot take the exception (a parent that has started other
  // children, or is suspending on this one): a start that cannot be queued ends the task unstarted
  // with that exception, as a task that failed at once, and its awaiter hears it.
  void start_or_discard() noexcept {
    try {
      start();
    } catch (...) {
      discard(std::current_exception());
    }
  }
  // Starts the attached frame here (the caller runs on the executor).
  // (Not a new turn of the executor: the caller's turn goes on.)
  void start_here() {
    keep_alive keep(this);
    resume_segment(*this, frame_);
  }

  void complete() noexcept override {
    this->attachments().task_ended();
    std::exchange(frame_, nullptr).destroy();
    end();
  }

  // Ends the job without ever running its task (the attached frame is destroyed unstarted): it
  // ends with no result, or with `why` (an exception that stopped it from starting, which whoever
  // started it hears: not unobserved), and lets go of the reference a running segment would have
  // held.
  void discard(std::exception_ptr why = nullptr) noexcept {
    std::exchange(frame_, nullptr).destroy();
    if (why) {
      result_.set_exception(std::move(why));
      mark_observed();
      abandoned_ = true;  // (it never ran: nothing of it failed)
    }
    end();
    this->let_go_of_chain_reference();
  }

  // (Sequentially consistent: a waiter publishes its signal, then reads this; the end publishes
  // this, then reads the signal. One of the two sees the other.)
  bool done() const noexcept { return callbacks_.load(std::memory_order_seq_cst) == ended(); }

  // Job handles (job_handle_references): each is an object reference, and they are counted apart
  // as well, so that the last one to go once the job is done destroys the result on its own thread.
  void count_handle() noexcept { handles_.fetch_add(1, std::memory_order_relaxed); }
  void uncount_handle() noexcept {
    if (handles_.fetch_sub(1, std::memory_order_acq_rel) == 1 && done()) drop_result();
  }

  // Blocks the calling thread until the job has ended, or until `deadline`; returns done().
  // However often it is called, a job keeps one signal for all its waiters.
  template <class Clock, class Duration>
  bool wait_until(const std::chrono::time_point<Clock, Duration>* deadline) {
    if (done()) return true;
    // Blocking inside posted inline work: work it queued behind itself may be what ends the job.
    inline_queue::run_pending();
    if (done()) return true;
    job_wait_signal& signal = wait_signal();
    std::unique_lock lock(signal.mutex);
    auto over = [&] { return signal.ended || done(); };
    if (!deadline) {
      signal.cv.wait(lock, over);
      return true;
    }
    return signal.cv.wait_until(lock, *deadline, over);
  }

  // The job was cancelled through its handle: if it then ends with operation_aborted, that is
  // what was asked for, not an unobserved failure.
  void cancel_on_request() {
    cancel_requested_.store(true, std::memory_order_relaxed);
    this->cancel();
  }

  // Destroys the result here, on the calling thread (reporting an exception nobody observed).
  // For whoever is the last that can see the result: a join's parent once the join is over, the
  // last job handle once the job is done.
  void drop_result() noexcept {
    report_if_unobserved();
    result_.clear();
  }

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
  // result is then operation_aborted, which nobody needs to be told about), or never started (its
  // start failed, and whoever started it heard why). Read once it ended.
  bool abandoned() const noexcept { return abandoned_; }
  void mark_observed() noexcept { observed_.store(true, std::memory_order_relaxed); }
  // True for the first caller only: a move-only result can be taken once.
  bool claim_result() noexcept { return !taken_.exchange(true, std::memory_order_acq_rel); }

 protected:
  ~result_segment() override {
    if (frame_) frame_.destroy();  // attached but never started (start() threw)
    report_if_unobserved();
    delete waiters_.load(std::memory_order_relaxed);
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
    // A job's callbacks and get_result() read the value in place: a loaned one (see loan) is taken
    // here, on the task's executor. A child's parent takes it from its loan itself.
    if (read_in_place_) result_.settle();
    mark_ended();
    leave_context();
    on_end();
    finish();
  }

  // Runs the callbacks (those registered meanwhile too), then reports done: whoever sees done()
  // sees every callback's effects. Then wakes the blocked waiters.
  void finish() noexcept {
    for (;;) {
      job_callback<T>* newest_first = callbacks_.exchange(nullptr, std::memory_order_acq_rel);
      if (!newest_first) {
        job_callback<T>* none = nullptr;
        if (callbacks_.compare_exchange_strong(none, ended(), std::memory_order_seq_cst)) break;
        continue;
      }
      job_callback<T>* oldest_first = nullptr;
      while (newest_first) oldest_first = std::exchange(newest_first, std::exchange(newest_first->next, oldest_first));
      while (oldest_first) {
        job_callback_ptr<T> callback(std::exchange(oldest_first, oldest_first->next));
        run_callback(*callback);
      }
    }
    if (job_wait_signal* signal = waiters_.load(std::memory_order_seq_cst)) {
      std::lock_guard lock(signal->mutex);
      signal->ended = true;
      signal->cv.notify_all();
    }
  }

  job_wait_signal& wait_signal() {
    job_wait_signal* signal = waiters_.load(std::memory_order_acquire);
    if (signal) return *signal;
    auto fresh = std::make_unique<job_wait_signal>();
    if (waiters_.compare_exchange_strong(signal, fresh.get(), std::memory_order_seq_cst)) return *fresh.release();
    return *signal;
  }

  void report_if_unobserved() noexcept {
    if (observed_.exchange(true, std::memory_order_relaxed) || !result_.has_exception()) return;
    if (cancel_requested_.load(std::memory_order_relaxed) && is_operation_aborted(result_.exception())) return;
    report_unobserved_exception(result_.exception(), result_.note());
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
  std::atomic<job_wait_signal*> waiters_{nullptr};
  std::atomic<std::uint32_t> handles_{0};
  std::atomic<bool> observed_{false};
  std::atomic<bool> taken_{false};
  std::atomic<bool> cancel_requested_{false};
  std::optional<any_strand> own_strand_;
  bool abandoned_ = false;
  const bool read_in_place_ = true;  // a job's state (not a child's)
};

// How a job handle counts (counted_ref's Count): an object reference, and one handle more.
struct job_handle_references {
  template <class T>
  static void add(result_segment<T>& segment) noexcept {
    segment.count_handle();
    object_references::add(segment);
  }
  template <class T>
  static void drop(result_segment<T>& segment) noexcept {
    segment.uncount_handle();
    object_references::drop(segment);
  }
};

// A job handle that takes over the caller's reference to `segment` (adding none, counting one
// handle more).
template <class T>
counted_ref<result_segment<T>, job_handle_references> adopt_as_handle(result_segment<T>* segment) noexcept {
  if (segment) segment->count_handle();
  return adopt<result_segment<T>, job_handle_references>(segment);
}

// A job whose task comes from a callable (typically a capturing lambda): the callable lives here,
// so its captures outlive the task's frame, and goes when the task ends (as asio::co_spawn's), not
// with the last job handle: what it captured (a subscriber, a lock, a socket) is let go of then.
template <class T, class F>
class factory_root_segment final : public result_segment<T> {
 public:
  factory_root_segment(placement&& where, F factory)
      : result_segment<T>(std::move(where)), factory_(std::in_place, std::move(factory)) {}
  CORAL_CORO_CONSUMING_WRAPPER auto make_task() { return (*factory_)(); }

 private:
  void on_end() noexcept override { factory_.reset(); }

  std::optional<F> factory_;
};

}  // namespace coral::detail
