#pragma once

#include <atomic>
#include <boost/asio/detail/call_stack.hpp>
#include <boost/asio/detail/thread_context.hpp>
#include <boost/intrusive/list.hpp>
#include <memory>
#include <mutex>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/ref_counted.hpp"

namespace coral::detail {

// Something that lives on an execution context and must be told when that context shuts down
// (a task's chain, waiting on something outside the context). Linked into its context's gate.
// The shutdown holds a reference while it abandons a member.
class gate_member : public ref_counted<gate_member> {
 public:
  // On the thread destroying the context, once nothing can post to it any more: let go of
  // everything outside the context and of the context's own objects.
  virtual void abandon() noexcept = 0;

 protected:
  ~gate_member() = default;

 private:
  friend class context_gate;
  friend class ref_counted<gate_member>;
  // Virtual, unlike other counted objects': the gate releases members of every kind, and each
  // frees itself its own way (a segment is deleted, a pending operation goes back to its
  // handler's allocator).
  virtual void destroy_self() noexcept = 0;

  // (Guarded by the gate's members mutex; unlinked, it says so.)
  boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> gate_hook_;
};

// The door into one execution context from outside it. Code that is not running on the context
// (a channel woken by another thread, a child finishing on the pool, cancel() from any thread)
// passes through the gate to post there; the context's shutdown closes the gate and then waits
// for the passes already granted, so nothing posts into a context that is being destroyed, and a
// post that started before the shutdown has returned before the context's memory goes.
//
// Shared (not owned by the context): whoever may still try to enter holds it, and finds it closed.
class context_gate {
 public:
  // `scheduler`: the context's Asio scheduler, if it has one (io_context, thread_pool).
  context_gate(bool single_threaded, asio::detail::thread_context* scheduler) noexcept
      : single_threaded_(single_threaded), asio_scheduler_(scheduler) {}

  // Lock-free; true if the caller may post to the context until leave().
  bool enter() noexcept {
    entered_.fetch_add(1, std::memory_order_seq_cst);
    if (open_.load(std::memory_order_seq_cst)) return true;
    leave();
    return false;
  }
  void leave() noexcept { entered_.fetch_sub(1, std::memory_order_seq_cst); }
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }

  // A granted entry, left when it goes.
  class pass {
   public:
    explicit pass(context_gate& gate) noexcept : gate_(gate.enter() ? &gate : nullptr) {}
    pass(const pass&) = delete;
    pass& operator=(const pass&) = delete;
    ~pass() {
      if (gate_) gate_->leave();
    }
    explicit operator bool() const noexcept { return gate_ != nullptr; }

   private:
    context_gate* gate_;
  };

  // True when the context is an io_context created with concurrency hint 1: coral trusts it to be
  // run by one thread and does not serialise its tasks with a strand.
  bool single_threaded() const noexcept { return single_threaded_; }

  // Whether the calling thread is running the context's scheduler (as its executors'
  // running_in_this_thread()). Safe after the context is gone: only the address is compared.
  bool runs_in_this_thread() const noexcept {
    return asio_scheduler_ &&
           asio::detail::call_stack<asio::detail::thread_context, asio::detail::thread_info_base>::contains(
               asio_scheduler_) != nullptr;
  }

  // Members are linked while they are alive on the context; abandoned at shutdown.
  // Returns false if the gate is already closed (the member was not linked).
  bool link(gate_member& m) {
    std::lock_guard lock(members_mutex_);
    if (!is_open()) return false;
    members_.push_front(m);
    return true;
  }
  // Returns true for the one caller that unlinks `m` (the member's end, or the shutdown).
  bool unlink(gate_member& m) noexcept {
    std::lock_guard lock(members_mutex_);
    return unlink_locked(m);
  }
  // For a member holding something that belongs to the context (a completion handler): whichever of
  // its owner and the shutdown unlinks it has it. If this caller does, runs `post()` inside a pass,
  // or `drop()` under the members lock once the gate is closing (the context surely exists in both).
  template <class Post, class Drop>
  void claim(gate_member& m, Post&& post, Drop&& drop) {
    claim_then([&](bool locked) noexcept { return locked ? unlink_locked(m) : unlink(m); }, post, drop);
  }
  // Unlinks `m` and, if this caller did, runs `let_go()` (which ends outstanding work on the
  // context) while the context surely exists.
  template <class F>
  void unlink_and(gate_member& m, F&& let_go) noexcept {
    claim(m, let_go, let_go);
  }
  // As unlink_and, for a member that is not linked (a hosted segment): `done` says who lets go.
  // (An atomic, not the members lock, while the gate is open.)
  template <class F>
  void once_and(std::atomic<bool>& done, F&& let_go) noexcept {
    claim_then([&](bool) noexcept { return !done.exchange(true, std::memory_order_acq_rel); }, let_go, let_go);
  }
  // Runs f() under the members lock if `m` is still linked (for cancel(), which must not race
  // with the member's end). Returns whether it ran.
  template <class F>
  bool if_linked(gate_member& m, F&& f) {
    std::lock_guard lock(members_mutex_);
    if (!m.gate_hook_.is_linked()) return false;
    f();
    return true;
  }

  // Called by the context's shutdown: close, wait for the passes in flight, abandon every member.
  void shut_down() noexcept;

 private:
  // The one caller for whom `claim(locked)` is true runs `post()` inside a pass or, once the gate
  // is closing, `drop()` under the members lock, which the shutdown takes before the context can
  // go: either way while the context surely exists.
  template <class Claim, class Post, class Drop>
  void claim_then(Claim&& claim, Post& post, Drop& drop) {
    if (pass p(*this); p) {
      if (claim(false)) post();
      return;
    }
    std::lock_guard lock(members_mutex_);
    if (claim(true)) drop();
  }

  bool unlink_locked(gate_member& m) noexcept {
    if (!m.gate_hook_.is_linked()) return false;
    members_.erase(members_.iterator_to(m));
    return true;
  }

  const bool single_threaded_;
  asio::detail::thread_context* const asio_scheduler_;
  std::atomic<bool> open_{true};
  std::atomic<unsigned> entered_{0};
  std::mutex members_mutex_;
  boost::intrusive::list<
      gate_member, boost::intrusive::constant_time_size<false>,
      boost::intrusive::member_hook<gate_member, decltype(gate_member::gate_hook_), &gate_member::gate_hook_>>
      members_;
};

// The gate of the execution context behind `executor` (created with the context's coral service
// on first use).
std::shared_ptr<context_gate> gate_of(asio::execution_context& context);

}  // namespace coral::detail
