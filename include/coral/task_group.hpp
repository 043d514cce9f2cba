#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <utility>

#include "coral/detail/core/executors.hpp"
#include "coral/detail/join/group_state.hpp"
#include "coral/spawn.hpp"
#include "coral/task.hpp"

namespace coral {

// A set of tasks started one by one and joined together:
//
//   coral::task_group g(co_await coral::this_task::executor);
//   for (auto& s : sockets) g.spawn(serve(s));
//   co_await g.join();
//
// - spawn(t) starts a task (or a callable returning one, kept alive until its task ends, as with
//   coral::spawn) on the group's executor, or on the task's bound executor type; spawn(ex, t) on
//   `ex` (an executor or execution context: a connection's own context, say). Like coral::spawn,
//   it runs no task code itself. The tasks' values are discarded.
// - join() waits (without blocking a thread; the joining task resumes on its own executor) until
//   every task spawned so far has ended, then rethrows the first failure, if any. The group can
//   be used again afterwards.
// - The first task to fail cancels the others (and any spawned later, until the join).
// - cancel() cancels every running task, and any spawned later until the next join(); tasks that
//   then end with operation_aborted are not failures.
// - Cancelling the joining task cancels the group's tasks; join() still waits for them, then
//   throws operation_aborted.
// - A group destroyed without a join (an exception between spawn and join, say) cancels its
//   tasks; they end on their own, their frames are freed, and a failure nobody joined to see is
//   reported through the unobserved-exception handler (stderr by default), never lost.
//
// Thread safety: distinct objects: safe. Shared objects: safe (spawn, cancel and size may be
// called from any thread; one join at a time).
class task_group {
 public:
  // `executor`: an executor or execution context, where the tasks run unless bound elsewhere.
  template <class Executor>
  requires detail::executor_like<std::remove_cvref_t<Executor>> ||
      detail::execution_context_like<std::remove_cvref_t<Executor>>
  explicit task_group(Executor&& executor)
      : executor_(detail::erase_executor(detail::executor_of(executor))),
        state_(detail::adopt(new detail::group_state)) {}
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  ~task_group() { state_->cancel(); }

  // (`where`, left to its default, is the place of the call: see coral::dump_tasks.)
  template <detail::task_source Source>
  void spawn(Source&& source, detail::code_location where = detail::code_location::here()) {
    spawn_on(executor_, std::forward<Source>(source), where);
  }
  template <class Executor, detail::task_source Source>
  requires detail::executor_like<std::remove_cvref_t<Executor>> ||
      detail::execution_context_like<std::remove_cvref_t<Executor>>
  void spawn(Executor&& executor, Source&& source, detail::code_location where = detail::code_location::here()) {
    spawn_on(detail::erase_executor(detail::executor_of(executor)), std::forward<Source>(source), where);
  }

  void cancel() noexcept { state_->cancel(); }

  // The number of tasks spawned and not yet ended.
  std::size_t size() const noexcept { return state_->size(); }

  // What join() returns, to be awaited once by one task.
  // Thread safety: distinct objects: safe. Shared objects: unsafe.
  class join_operation;
  join_operation join() noexcept;

  boost::asio::any_io_executor get_executor() const noexcept { return executor_; }

 private:
  template <detail::task_source Source>
  void spawn_on(boost::asio::any_io_executor executor, Source&& source, const detail::code_location& where) {
    using T = typename detail::task_of_t<Source>::value_type;
    auto child = detail::make_root(std::move(executor), std::forward<Source>(source), true, where);
    auto link = std::make_unique<detail::group_link>();
    detail::group_link& linked = *link;
    child->when_done([group = detail::counted_ref<detail::group_state>(state_.get()),
                      link = std::move(link)](detail::result_segment<T>& s) {
      // The group reports the failure (join, or the group's end): not the job.
      s.mark_observed();
      std::exception_ptr failure;
      detail::failure_note_ptr note;
      // A task destroyed with its context (shutdown) did not fail: there is nothing to report.
      if (s.result().has_exception() && !s.abandoned()) {
        failure = std::exchange(s.result().exception_ref(), nullptr);
        note = s.result().take_note();
      }
      // The group has no use for a value: it goes before the group hears that the task ended, so
      // that nothing of the task outlives the join.
      s.result().clear();
      group->child_ended(*link, std::move(failure), std::move(note));
    });
    // (If the start fails, the child ends unstarted, and so leaves the group, before the exception
    // leaves this call.)
    state_->add(linked, *child.get());
    child.start();
  }

  boost::asio::any_io_executor executor_;
  detail::counted_ref<detail::group_state> state_;
};

class task_group::join_operation : public detail::external_wait {
 public:
  using coral_awaitable = void;
  static constexpr detail::wait_kind coral_wait_kind() noexcept { return detail::wait_kind::group_join; }
  explicit join_operation(detail::group_state& state) noexcept : state_(&state) {}

  bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    segment_ = &coroutine.promise().segment();
    if (segment_->cancelled()) state_->cancel();  // level-triggered: the join still waits for them
    if (!state_->wait(coroutine)) return false;
    forward_ = segment_->op_slot().is_connected();
    if (forward_) segment_->slot().template emplace<forward_group_cancellation>(state_);
    segment_->set_external_wait(this);
    return true;
  }

  void await_resume() {
    if (segment_) {
      segment_->set_external_wait(nullptr);
      if (forward_) segment_->slot().clear();
    }
    if (auto failure = state_->take_failure()) std::rethrow_exception(failure);
    if (segment_) segment_->throw_if_cancelled();
  }

 private:
  struct forward_group_cancellation {
    detail::counted_ref<detail::group_state> state;
    explicit forward_group_cancellation(detail::group_state* s) noexcept : state(s) {}
    void operator()(boost::asio::cancellation_type) const { state->cancel(); }
  };

  // The joiner's context is shutting down. Letting go of the joiner may destroy its frame, and
  // with it the group: cancel first.
  void abandon() noexcept override {
    state_->cancel();
    state_->abandon_wait();
  }

  detail::group_state* state_;
  detail::task_segment* segment_ = nullptr;
  bool forward_ = false;
};

inline task_group::join_operation task_group::join() noexcept {
  return join_operation(*state_);
}

}  // namespace coral
