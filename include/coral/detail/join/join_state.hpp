#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "coral/detail/core/ref_counted.hpp"
#include "coral/detail/core/result_segment.hpp"
#include "coral/detail/wait/race.hpp"
#include "coral/detail/wait/suspended_task.hpp"
#include "coral/detail/wait/wait_link.hpp"

namespace coral::detail {

// What ends a join early: the first failure (when_all: the siblings are cancelled) or the first
// child to end at all (when_any: the losers are cancelled). Either way every child is awaited.
enum class join_kind { first_failure, first_end };

// A parent task waiting on a set of children, each running as a segment of its own (its own
// executor, signal and cancellation flag). Shared by the parent's awaiter and the children, and
// freed by whichever lets go last.
//
// `remaining_` counts the children that have not ended, plus one for the parent while it is
// still starting them: so the parent is resumed only by the last child to end after the start,
// and finds out by itself when they all ended during the start (children that finish without
// suspending), in which case it does not suspend at all.
class join_state : public ref_counted<join_state> {
 public:
  join_state(join_kind kind, std::size_t children) : kind_(kind), remaining_(children + 1) {
    children_.reserve(children);
  }

  // Before any child starts: registers a child (holding an object reference to it). `hosted`: it
  // runs on the parent's executor, which runs one thing at a time, hosted by the parent's segment.
  // `local`: it runs on the parent's execution context (hosted or not).
  void add_child(task_segment& child, bool hosted, bool local, task_segment& parent_segment) {
    children_.push_back({segment_ref(&child), hosted, local});
    if (!local && !parent_gate_) parent_gate_ = parent_segment.shared_gate();
    // (Nothing else looks at the count before the children start: no read-modify-write needed.)
    if (local) local_pending_.store(local_pending_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // A child ended (any thread). The decisive one cancels all its siblings. `in_own_turn`: it
  // ended in a turn of its executor (not while the context shuts down); if that is the parent's
  // executor, the parent may be resumed right here instead of being posted.
  void child_ended(std::size_t index, bool failed, bool in_own_turn) noexcept {
    const bool on_parent_executor = in_own_turn && children_[index].hosted;
    // (A channel may have decided the race for this child already, when it handed it a value.)
    if ((kind_ == join_kind::first_end || failed) && decision_.decide(static_cast<std::ptrdiff_t>(index))) {
      cancel_children(asio::cancellation_type::all, on_parent_executor, index);
    }
    arrive(on_parent_executor, children_[index].local);
    if (children_[index].local) local_child_gone();
  }

  // Any thread: a branch that is not a child (with_timeout's deadline, `cause`) has ended. If it
  // is the first, it decides the join and every child is cancelled.
  void end_branch(std::ptrdiff_t branch, cancel_cause cause) noexcept {
    if (decision_.decide(branch)) cancel_children(asio::cancellation_type::all, false, none_spared, cause);
  }

  // Whether child `index` runs on the parent's executor (so it starts on the spot).
  bool starts_here(std::size_t index) const noexcept { return children_[index].hosted; }

  // The index of the child that ended the join early (first failure / first end), or -1.
  std::ptrdiff_t decided_branch() const noexcept { return decision_.winner(); }

  // For an operation that is child `index` of a when_any: its right to happen. Empty in a
  // when_all, where every child's operation happens.
  race_ticket ticket(std::size_t index) noexcept {
    if (kind_ != join_kind::first_end) return {};
    return race_ticket(decision_, static_cast<std::ptrdiff_t>(index));
  }

  // Cancels every child but `except`. `on_parent_executor`: the caller runs on the parent's
  // executor, where the children that share it are suspended (or ended): their signals are emitted
  // right here rather than through a post, which on a strand would wake another thread to run it.
  // The others' go through their executors.
  // `cause`: why (the parent's own cause, when its cancellation is forwarded).
  static constexpr std::size_t none_spared = static_cast<std::size_t>(-1);
  void cancel_children(asio::cancellation_type type, bool on_parent_executor, std::size_t except = none_spared,
                       cancel_cause cause = not_a_deadline) noexcept {
    for (std::size_t i = 0; i < children_.size(); ++i) {
      if (i == except) continue;
      if (on_parent_executor && children_[i].hosted) {
        children_[i].segment->cancel_here(type, cause);
      } else {
        children_[i].segment->cancel(type, cause);
      }
    }
  }

  // The parent's context is shutting down: the children hosted by the parent's segment are not
  // linked to the context's gate, so they are abandoned from here.
  void abandon_hosted_children() noexcept {
    for (auto& child : children_) {
      if (child.hosted) child.segment->abandon_hosted();
    }
  }

  // The parent, once it has started every child: true if it must suspend (some child is still
  // running and will resume it), false if they have all ended already.
  bool parent_arrives() noexcept {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return true;
    link_.mark_completed();
    return false;
  }

  // Whether every child has ended and the parent was (or is about to be) resumed: nothing of the
  // children touches their results any more.
  bool over() const noexcept { return link_.completed(); }

  // The parent's context is shutting down: true if the parent let go before the children ended
  // (they are then cancelled and nobody resumes the parent).
  bool abandon_wait() noexcept { return link_.abandon(); }

  // After abandon_wait(): the parent's frames go once the children on its context have gone (during the
  // same shutdown: they are abandoned, or their pending handlers destroyed), never before, since a
  // child may hold references into its parent's frame. Children on other contexts end on their
  // own; the parent cannot wait for them.
  void let_go_of_parent_after_local_children() noexcept { local_child_gone(); }

  // Before the parent suspends (see resumption_memory::prepare).
  void prepare_resumption(executor_target parent_kind) { parent_resumption_.prepare(parent_kind); }

  suspended_task parent;

 private:
  friend class ref_counted<join_state>;
  ~join_state() = default;
  void destroy_self() noexcept { delete this; }

  void arrive(bool on_parent_executor, bool local) noexcept {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // A child on another context takes a pass on the parent's gate before it may claim the parent.
    // If the parent's context is shutting down, the parent stays for the shutdown to let go of (the
    // abandon_wait in its abandon), on the thread destroying the context while the context still exists,
    // never on this thread, possibly after the context's services are gone.
    std::optional<context_gate::pass> pass;
    if (!local) {
      pass.emplace(*parent_gate_);
      if (!*pass) return;
    }
    if (!link_.complete()) return;
    if (on_parent_executor) {
      parent.resume_nested(&parent_resumption_);
    } else if (pass) {
      parent.resume_later_within_pass(&parent_resumption_);
    } else {
      parent.resume_later(&parent_resumption_);
    }
  }

  // One for each child on the parent's context that has not ended, and one for the parent's
  // abandonment: the last to go lets go of the parent (only ever reached once the wait was abandoned).
  void local_child_gone() noexcept {
    if (local_pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) parent.let_go();
  }

  const join_kind kind_;
  std::atomic<std::size_t> local_pending_{1};
  std::atomic<std::size_t> remaining_;
  race_decision decision_;
  wait_link link_;
  resumption_memory parent_resumption_;  // the parent's join awaiter keeps this object until it resumes
  // Fixed before the first child starts; read-only afterwards (so any thread may walk it).
  struct child {
    segment_ref segment;
    bool hosted;
    bool local;
  };
  std::vector<child> children_;
  // The parent's gate, when a child runs on another context (it passes through the gate when it
  // ends; the parent may be gone by then).
  std::shared_ptr<context_gate> parent_gate_;
};

// A child of a join: a segment whose end is reported to the join. Its result stays here until
// the parent takes it.
template <class T>
class join_member final : public result_segment<T> {
 public:
  join_member(placement&& where, join_state& join, std::size_t index)
      : result_segment<T>(std::move(where), typename result_segment<T>::child_segment_t()),
        join_(&join),
        index_(index) {}

  std::size_t index() const noexcept { return index_; }
  // While it runs: the ticket its operation carries in a race (empty in a when_all).
  race_ticket ticket() const noexcept { return join_->ticket(index_); }

 protected:
  void on_end() noexcept override {
    // The parent takes the result, or drops it on purpose (a loser, a sibling of the first
    // failure): never an unobserved exception.
    this->mark_observed();
    // The join holds a reference to this member until it goes: let go of it here, not in the
    // destructor, or neither would ever go.
    const counted_ref<join_state> join = std::move(join_);
    join->child_ended(index_, this->result().has_exception(), !this->abandoned());
  }

 private:
  counted_ref<join_state> join_;
  std::size_t index_;
};

}  // namespace coral::detail
