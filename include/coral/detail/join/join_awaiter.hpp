#pragma once

#include <coroutine>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include "coral/detail/core/ref_counted.hpp"
#include "coral/detail/join/join_state.hpp"
#include "coral/detail/wait/suspended_task.hpp"

namespace coral::detail {

// Forwards the parent's cancellation to every child of the join (installed in the parent's slot,
// so it runs on the parent's executor; each child's signal is emitted on the child's executor).
struct forward_join_cancellation {
  counted_ref<join_state> join;
  task_segment* parent;  // whose slot holds this handler: alive while it runs
  forward_join_cancellation(join_state* j, task_segment* p) noexcept : join(j), parent(p) {}
  void operator()(asio::cancellation_type type) const {
    // On an executor that runs posted work on the spot (inline_executor), a cancelled child may end
    // and resume the parent, which clears its slot and destroys this handler, before
    // cancel_children returns: the join is held by the call, not by the handler.
    counted_ref<join_state> held(join.get());
    held->cancel_children(type, true, join_state::none_spared, parent->cause());
  }
};

// The parent's side of a join, for awaiters that own their children's states: creates the join,
// starts the children, suspends, and lets go if the parent's context shuts down.
class join_awaiter_base : public external_wait {
 public:
  join_awaiter_base() noexcept = default;
  join_awaiter_base(join_awaiter_base&& other) noexcept
      : join_(std::move(other.join_)), parent_segment_(other.parent_segment_), forward_(other.forward_) {}
  join_awaiter_base& operator=(join_awaiter_base&&) = delete;

 protected:
  ~join_awaiter_base() {
    if (join_) {
      // The frame is going away while children may still run (its context shut down): they are
      // cancelled and clean up after themselves.
      if (join_->abandon_wait()) join_->cancel_children(asio::cancellation_type::all, false);
    }
  }

  // Suspends the parent and creates the join; then the caller creates the members (make_member)
  // and calls start_members.
  template <class Promise>
  void open(std::coroutine_handle<Promise> parent, join_kind kind, std::size_t children) {
    join_ = adopt(new join_state(kind, children));
    join_->prepare_resumption(parent.promise().segment().executor_target_kind());
    join_->parent.suspend(parent);
    parent_segment_ = &parent.promise().segment();
  }

  // A member running `frame` on `*bound` if given, else on the parent's executor.
  template <class T>
  counted_ref<join_member<T>> make_member(std::coroutine_handle<task_promise<T>> frame,
                                          const std::optional<asio::any_io_executor>& bound, std::size_t index) {
    struct frame_guard {
      std::coroutine_handle<task_promise<T>> f;
      ~frame_guard() {
        if (f) f.destroy();
      }
    } guard{frame};
    // Always cancellable (a sibling's failure or a win cancels it), so always serialised: on the
    // parent's executor as it is (hosted by the parent's segment) when that one is.
    const auto& executor = bound ? *bound : parent_segment_->executor();
    const bool hosted = parent_segment_->can_host() && (!bound || executor == parent_segment_->executor());
    // (The reference made with it is its running segment's; the one returned, the awaiter's until
    // it has taken the result.)
    auto* made =
        new join_member<T>(hosted ? parent_segment_->hosted_placement() : place(executor, true), *join_, index);
    counted_ref<join_member<T>> member(made);
    member->attach(std::exchange(guard.f, nullptr));
    member->start_record(parent_segment_, {});
    join_->add_child(*member, hosted, &member->gate() == &parent_segment_->gate(), *parent_segment_);
    return member;
  }

  // A member made, not started, and never to be: it ends without running.
  template <class T>
  static void discard_unstarted(const counted_ref<join_member<T>>& member) noexcept {
    if (member) member->discard();
  }

  // Once every member exists: lets the parent's cancellation reach them and registers the wait.
  void begin_start() {
    if (parent_segment_->op_slot().is_connected()) {
      parent_segment_->slot().template emplace<forward_join_cancellation>(join_.get(), parent_segment_);
      forward_ = true;
    }
    parent_segment_->set_external_wait(this);
  }

  // Starts a member: on the spot when it runs on the parent's executor, else through its own.
  // Once the join is decided (a child failed, or won), the members not started yet never run.
  // A member whose start cannot be queued (an allocation failed) ends unstarted with that
  // exception, as a child that failed at once: the members started before it may be running
  // already, so the exception decides the join rather than leaving it, and reaches the parent
  // once they have ended.
  template <class T>
  void start(join_member<T>& member) {
    if (join_->decided_branch() >= 0) {
      member.discard();
    } else if (join_->starts_here(member.index())) {
      member.start_here();
    } else {
      member.start_or_discard();
    }
  }

  // Once every member has started: whether the parent must suspend.
  bool end_start() noexcept {
    if (join_->parent_arrives()) return true;
    // Every child ended while being started: carry on without suspending.
    finish_waiting();
    join_->parent.let_go();
    return false;
  }

  // After the resumption (or instead of suspending).
  void finish_waiting() noexcept {
    parent_segment_->set_external_wait(nullptr);
    if (forward_) {
      parent_segment_->slot().clear();
      forward_ = false;
    }
  }

  join_state& join() const noexcept { return *join_; }

  // The one place a join's parent lets go of a child. Once the join is over, whatever the child
  // produced and the parent did not take (a loser's value, a sibling's after the first failure,
  // the moved-from remains of a value taken) is destroyed here, on the parent's executor, before
  // the parent goes on: never afterwards on the child's thread. (A join given up because the
  // parent's context shuts down leaves it to the children, which may still be running.)
  template <class T>
  void let_go_of(counted_ref<join_member<T>>& member) noexcept {
    if (!member) return;
    if (join_ && join_->over()) member->drop_result();
    member.reset();
  }

 private:
  void abandon() noexcept override {
    if (!join_->abandon_wait()) return;  // the children have ended and the parent's resumption is queued
    join_->cancel_children(asio::cancellation_type::all, false);
    join_->abandon_hosted_children();
    join_->let_go_of_parent_after_local_children();  // may destroy the frame holding this awaiter
  }

  counted_ref<join_state> join_;
  task_segment* parent_segment_ = nullptr;
  bool forward_ = false;
};

}  // namespace coral::detail
