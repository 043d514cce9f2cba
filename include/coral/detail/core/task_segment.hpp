#pragma once

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/context_gate.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/core/ref_counted.hpp"
#include "coral/detail/core/segment_attachment.hpp"
#include "coral/detail/tracking/task_record.hpp"

namespace coral::detail {

// Where a chain of coroutines runs: the executor (serialised: a strand unless the executor already
// runs one thing at a time) and the gate of its execution context.
struct placement {
  asio::any_io_executor executor;
  std::shared_ptr<context_gate> gate;
  // Whether `executor` runs one thing at a time (a strand, a single-threaded io_context).
  bool serialised = false;
  // For a hosted segment (see task_segment): its host, whose executor and gate it uses (then
  // `executor` and `gate` are empty).
  class task_segment* host = nullptr;
};

// Finds the gate of `executor`'s context and, for a segment that can be cancelled, serialises
// the executor (see placement). A segment nothing can cancel (spawned with a completion token
// without a cancellation slot, or a child of such a task on the same context) needs no strand: its
// coroutines run one at a time anyway, and only cancellation reaches it from outside.
placement place(const asio::any_io_executor& executor, bool cancellable = true);

// A wait whose waker lives outside the task's execution context (a channel, a child task on
// another executor). When the context shuts down the wait is abandoned: it lets go of its
// waker and lets go of the chain, so the chain's frames are destroyed with the context.
class external_wait {
 public:
  virtual void abandon() noexcept = 0;

 protected:
  ~external_wait() = default;
};

// Why a segment was cancelled, as a rank: of several causes the lowest is kept. A cancellation
// for no particular reason (a job's cancel, a sibling that won, a failure) has the lowest of all;
// a feature that cancels for reasons it must tell apart later ranks them above it (with_timeout:
// the deadline, so that the earliest deadline that cancelled the segment is known).
using cancel_cause = std::int64_t;
inline constexpr cancel_cause not_a_deadline = std::numeric_limits<cancel_cause>::min();

// One segment of a task: the coroutines that run on one executor, with everything they share.
// A spawned task is one segment (its root); a child awaited on another executor is a segment of
// its own. Inline children use their parent's segment.
//
// A child of a join that runs on its parent's executor (with_timeout's operation, a when_any
// branch) is a segment of its own too (its own cancellation), but it is *hosted*: it runs only
// while its parent waits for it, so it borrows what its host (the nearest segment that is not
// hosted) holds for the context: the executor, the gate's link and the outstanding work. It is
// reached at shutdown through its parent's wait (the join abandons it), and it needs no lock
// of the gate's to start and end. Each of these would otherwise be an atomic operation on a line
// every thread of the context shares, several times per timeout.
//
// Two counts:
//  - keep-alive references, held by whatever will resume the segment next (a posted handler, a
//    pending Asio operation, a channel waiter, a child's completion). When none is left the
//    segment can never run again and its frames are destroyed: this is how destroying an
//    io_context with suspended tasks frees them.
//  - object references: job handles, posted cancellations, and one for the running segment.
//
// Cancellation is level-triggered: `cancelled()` stays true once requested, and every suspension
// point checks it before suspending. The signal (whose slot Asio operations listen to) is only
// used on the segment's executor, which runs one thing at a time.
class task_segment : public gate_member {
 public:
  explicit task_segment(placement&& where);
  task_segment(const task_segment&) = delete;
  task_segment& operator=(const task_segment&) = delete;

  // Valid while the segment's coroutines can run (not after it ended or its context shut down).
  const asio::any_io_executor& executor() const noexcept { return host().executor_; }
  executor_target executor_target_kind() const noexcept { return host().target_; }
  context_gate& gate() const noexcept { return *host().gate_; }
  // For whoever may need the gate after the segment is gone (a child on another context, which
  // passes through its parent's gate when it ends).
  const std::shared_ptr<context_gate>& shared_gate() const noexcept { return host().gate_; }

  // For a child that runs on this segment's executor while this segment waits for it (a join's
  // member): whether that executor can be shared as it is (it runs one thing at a time), and then
  // the placement of a segment hosted by this one.
  bool can_host() const noexcept { return serialised_; }
  placement hosted_placement() noexcept { return placement{{}, nullptr, true, &host()}; }
  bool hosted() const noexcept { return static_cast<bool>(host_); }

  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  // Inline: every suspension point checks it; the throw itself is out of line.
  void throw_if_cancelled() const {
    if (cancelled()) [[unlikely]]
      throw_cancelled();
  }
  [[noreturn]] static void throw_cancelled();
  // The slot a wait listens to when it must hear cancellation and shutdown (channel, child).
  asio::cancellation_slot slot() noexcept { return signal_.slot(); }
  // The slot for an Asio operation on the segment's own context: unconnected while nothing can
  // cancel the segment (no job handle, no completion token slot, no parent), which spares the
  // operation its cancellation handler.
  asio::cancellation_slot op_slot() noexcept { return shared() ? signal_.slot() : asio::cancellation_slot(); }
  // Any thread: marks the segment cancelled (for `cause`) and emits its signal on its executor.
  void cancel(asio::cancellation_type type = asio::cancellation_type::all, cancel_cause cause = not_a_deadline);
  // On the executor: marks the segment cancelled (for `cause`) and emits its signal now.
  void cancel_here(asio::cancellation_type type, cancel_cause cause = not_a_deadline) {
    note_cause(cause);
    emit_here(type);
  }
  // Once cancelled(): what cancelled the segment; with several causes, any that is not a deadline
  // wins, else the earliest deadline.
  cancel_cause cause() const noexcept { return cause_.load(std::memory_order_acquire); }

  // On the executor, while the segment runs: what features built on tasks keep in it.
  segment_attachments& attachments() noexcept { return attachments_; }

  // On the executor, around a wait whose waker lives outside the context.
  void set_external_wait(external_wait* w) noexcept { external_wait_ = w; }

  // A hosted segment whose parent's wait was abandoned (its context is shutting down): what the
  // gate's shutdown does for a segment linked to it.
  void abandon_hosted() noexcept { abandon(); }

  // (A count of its own, not a second ref_counted: it starts at zero, abandon() takes one only
  // while any is left, and the last one ends the chain, not the object.)
  void add_keep_alive() noexcept { keep_alive_.fetch_add(1, std::memory_order_relaxed); }
  void release_keep_alive() noexcept {
    if (keep_alive_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      chain_released();
      let_go_of_chain_reference();
    }
  }
  // Called from the final suspension of the segment's outermost coroutine, on its executor.
  virtual void complete() noexcept = 0;

 protected:
  // Drops a keep-alive reference taken before the segment ever ran, without ending the chain: its
  // start failed, and the frame stays attached for whoever ends it unstarted.
  void forget_unstarted_keep_alive() noexcept { keep_alive_.fetch_sub(1, std::memory_order_relaxed); }
  // The object reference a segment is made with is its running chain's: the last keep-alive lets
  // go of it, or, for a segment that never ran, whoever discards it.
  void let_go_of_chain_reference() noexcept { drop_ref(); }

 public:
  // The segment's record for coral::dump_tasks, if tracking was on when it was made (null
  // otherwise). Made by its creator, before it starts: `parent`, the segment awaiting it (a
  // child's, a join branch's), or null for a spawned task, spawned at `where`.
#if CORAL_TASK_TRACKING
  task_record* record() const noexcept {
    return record_;
  }
  void start_record(const task_segment* parent, const code_location& where) {
    if (task_tracking_on.load(std::memory_order_relaxed)) [[unlikely]]
      make_own_record(parent, where);
  }
#else
  static constexpr task_record* record() noexcept {
    return nullptr;
  }
  void start_record(const task_segment*, const code_location&) noexcept {}
#endif

 protected:
  virtual ~task_segment();

  // No keep-alive reference is left while the frames are suspended: destroy them.
  virtual void chain_released() noexcept = 0;

  // The segment's end: unlinks it from its gate and lets go of its executor, outstanding work and
  // timer, so that nothing of the segment touches the context afterwards. Idempotent; the first
  // call (or the context's shutdown) does it.
  void leave_context() noexcept;

  // Called once, when the segment's frames are gone.
  void mark_ended() noexcept {
    ended_.store(true, std::memory_order_release);
    signal_.slot().clear();
#if CORAL_TASK_TRACKING
    if (record_) free_record(std::exchange(record_, nullptr));
#endif
  }

  void abandon() noexcept override;

 private:
  void destroy_self() noexcept override {
    delete this;
  }

  void note_cause(cancel_cause cause) noexcept {
    cancel_cause seen = cause_.load(std::memory_order_relaxed);
    while (cause < seen && !cause_.compare_exchange_weak(seen, cause, std::memory_order_acq_rel)) {
    }
  }
  void emit_here(asio::cancellation_type type) {
    cancelled_.store(true, std::memory_order_release);
    if (!ended_.load(std::memory_order_acquire)) signal_.emit(type);
  }

  template <class Executor>
  using tracked =
      std::decay_t<decltype(asio::prefer(std::declval<Executor>(), asio::execution::outstanding_work.tracked))>;
  // The segment whose executor, gate and work this one uses: itself unless it is hosted.
  task_segment& host() noexcept {
    return hosted() ? *host_ : *this;
  }
  const task_segment& host() const noexcept {
    return hosted() ? *host_ : *this;
  }
  void drop_executor() noexcept;
#if CORAL_TASK_TRACKING
  void make_own_record(const task_segment* parent, const code_location& where);
#endif

#if CORAL_TASK_TRACKING
  task_record* record_ = nullptr;
#endif
  // The segment hosting this one, if it is hosted.
  counted_ref<task_segment> host_;
  // Empty in a hosted segment.
  asio::any_io_executor executor_;
  std::shared_ptr<context_gate> gate_;
  // As with asio::co_spawn, a running segment counts as outstanding work on its executor: an
  // io_context's run() does not return while a task waits elsewhere. Typed on io_context and
  // thread_pool (the common cases) to keep every task small; any other executor is boxed.
  std::variant<std::monostate, tracked<asio::io_context::executor_type>, tracked<asio::thread_pool::executor_type>,
               std::unique_ptr<asio::any_io_executor>>
      work_;
  asio::cancellation_signal signal_;
  external_wait* external_wait_ = nullptr;
  segment_attachments attachments_;
  std::atomic<std::uint32_t> keep_alive_{0};
  std::atomic<bool> cancelled_{false};
  // (No cause until cancelled: the largest value, which any cause replaces.)
  std::atomic<cancel_cause> cause_{std::numeric_limits<cancel_cause>::max()};
  std::atomic<bool> ended_{false};
  // A hosted segment has no link to tell who leaves the context: this does.
  std::atomic<bool> left_{false};
  bool serialised_;
  executor_target target_ = executor_target::other;
};

// A keep-alive reference to a segment.
struct keep_alive_references {
  static void add(task_segment& segment) noexcept { segment.add_keep_alive(); }
  static void drop(task_segment& segment) noexcept { segment.release_keep_alive(); }
};
using keep_alive = counted_ref<task_segment, keep_alive_references>;

// An object reference to a segment.
using segment_ref = counted_ref<task_segment>;

// Resumes `coroutine`, of `segment`: its turn, for its record if it has one.
inline void resume_segment(task_segment& segment, std::coroutine_handle<> coroutine) {
#if CORAL_TASK_TRACKING
  if (task_record* record = segment.record()) [[unlikely]]
    return record_run(*record, [&] { coroutine.resume(); });
#endif
  static_cast<void>(segment);
  coroutine.resume();
}

// Resumes a suspended coroutine when invoked (through the executor it was posted to). If it is
// destroyed uninvoked, for example with its io_context, it lets go of the chain, which frees it.
// How many tasks a thread may resume on the spot (a waker running the task it woke, on the same
// executor) before it posts instead, per turn of the executor: without a budget, two tasks
// trading values over channels would run forever inside one handler, and nothing else queued on
// their executor (timers, sockets, other tasks, run_for's deadline) would ever run. Refilled when
// the executor hands a turn to coral.
inline constexpr unsigned inline_resumes_per_turn = 32;
inline constinit thread_local unsigned inline_resumes_left = inline_resumes_per_turn;

// Resumes a task posted to its executor: a new turn.
struct posted_resume {
  std::coroutine_handle<> coroutine;
  keep_alive keep;

  void operator()() {
    inline_resumes_left = inline_resumes_per_turn;
    auto k = std::move(keep);
    resume_segment(*k, std::exchange(coroutine, nullptr));
  }
};

}  // namespace coral::detail
