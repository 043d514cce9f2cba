#include "coral/detail/core/task_segment.hpp"

#include <optional>

#include "coral/detail/core/executors.hpp"
#include "coral/detail/core/result_segment.hpp"

namespace coral::detail {

placement place(const asio::any_io_executor& executor, bool cancellable) {
  auto gate = gate_of(asio::query(executor, asio::execution::context));
  if (executor.target<io_strand>() || executor.target<pool_strand>() || executor.target<any_strand>()) {
    return {executor, std::move(gate), true};
  }
  if (auto* io = executor.target<asio::io_context::executor_type>()) {
    if (gate->single_threaded()) return {executor, std::move(gate), true};
    if (!cancellable) return {executor, std::move(gate), false};
    return {asio::any_io_executor(asio::make_strand(*io)), std::move(gate), true};
  }
  if (!cancellable) return {executor, std::move(gate), false};
  if (auto* pool = executor.target<asio::thread_pool::executor_type>()) {
    return {asio::any_io_executor(asio::make_strand(*pool)), std::move(gate), true};
  }
  return {asio::any_io_executor(asio::make_strand(executor)), std::move(gate), true};
}

task_segment::task_segment(placement&& where)
    : host_(where.host),
      executor_(std::move(where.executor)),
      gate_(std::move(where.gate)),
      serialised_(where.serialised) {
  if (hosted()) return;
  constexpr auto tracked = asio::execution::outstanding_work.tracked;
  if (auto* io = executor_.target<asio::io_context::executor_type>()) {
    target_ = executor_target::io_context;
    work_.emplace<1>(asio::prefer(*io, tracked));
  } else if (auto* io_s = executor_.target<io_strand>()) {
    target_ = executor_target::io_strand;
    work_.emplace<1>(asio::prefer(io_s->get_inner_executor(), tracked));
  } else if (auto* pool = executor_.target<asio::thread_pool::executor_type>()) {
    target_ = executor_target::thread_pool;
    work_.emplace<2>(asio::prefer(*pool, tracked));
  } else if (auto* pool_s = executor_.target<pool_strand>()) {
    target_ = executor_target::pool_strand;
    work_.emplace<2>(asio::prefer(pool_s->get_inner_executor(), tracked));
  } else {
    work_.emplace<3>(std::make_unique<asio::any_io_executor>(asio::prefer(inner_executor_of(executor_), tracked)));
  }
  gate_->link(*this);
}

task_segment::~task_segment() {
#if CORAL_TASK_TRACKING
  if (record_) free_record(record_);  // (a task that never ran)
#endif
  leave_context();
}

void task_segment::throw_cancelled() {
  throw boost::system::system_error(asio::error::operation_aborted, "coral: the task was cancelled");
}

void task_segment::cancel(asio::cancellation_type type, cancel_cause cause) {
  note_cause(cause);
  cancelled_.store(true, std::memory_order_release);
  // Holds a reference to the segment, released also if it is destroyed without running.
  struct emit {
    segment_ref self;
    asio::cancellation_type type;
    void operator()() { self->emit_here(type); }
  } e{segment_ref(this), type};
  // Only while the segment is alive on its context (its executor is valid until it leaves): the
  // pass is taken and the executor copied under the members lock; the post itself (which may run
  // the task right here, on an inline executor) happens outside it. The pass outlives the copy,
  // which may hold a strand of the context.
  std::optional<context_gate::pass> pass;
  std::optional<asio::any_io_executor> executor;
  // (A hosted segment's signal goes through its host's executor, which is its own.)
  task_segment& host = this->host();
  host.gate_->if_linked(host, [&] {
    pass.emplace(*host.gate_);
    if (*pass) executor = host.executor_;
  });
  if (executor) asio::post(*executor, std::move(e));
}

void task_segment::leave_context() noexcept {
  // The tracked work ends on the context's scheduler: not after its shutdown stopped waiting.
  if (!hosted()) return gate_->unlink_and(*this, [this]() noexcept { drop_executor(); });
  gate().once_and(left_, [this]() noexcept { drop_executor(); });
}

void task_segment::abandon() noexcept {
  // A waker that found the gate closed may let go of the segment at this very moment, which
  // destroys its frames, and with them the external wait: hold the frames while abandoning it.
  // If they are already going, there is nothing left to abandon.
  std::uint32_t keeps = keep_alive_.load(std::memory_order_acquire);
  while (keeps != 0 &&
         !keep_alive_.compare_exchange_weak(keeps, keeps + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
  }
  // (A linked segment was unlinked by the shutdown, which leaves for it; a hosted one may be
  // leaving on a waker's thread, under the gate's lock, which the shutdown waits for.)
  auto leave = [this]() noexcept {
    if (!hosted() || !left_.exchange(true, std::memory_order_acq_rel)) drop_executor();
  };
  if (keeps == 0) return leave();
  if (auto* wait = std::exchange(external_wait_, nullptr)) wait->abandon();
  leave();
  release_keep_alive();  // the last one destroys the frames, as the abandoned wait would have
}

#if CORAL_TASK_TRACKING
void task_segment::make_own_record(const task_segment* parent, const code_location& where) {
  const auto& ex = executor();
  auto& context = asio::query(ex, asio::execution::context);
  const executor_kind kind = io_context_executor_of(ex) ? executor_kind::io_context
                             : ex.target<asio::thread_pool::executor_type>() || ex.target<pool_strand>()
                                 ? executor_kind::thread_pool
                                 : executor_kind::other;
  const bool strand = ex.target<io_strand>() || ex.target<pool_strand>() || ex.target<any_strand>();
  const std::uint64_t parent_id = parent && parent->record() ? parent->record()->id : 0;
  const std::uint64_t spawned_by = !parent && running_record ? running_record->id : 0;
  record_ = make_record(parent_id, spawned_by, where, &context, &ex.target_type(), kind, strand);
}
#endif

void task_segment::drop_executor() noexcept {
  attachments_.leave_context();
  work_.emplace<0>();
  executor_ = asio::any_io_executor();
}

}  // namespace coral::detail
