#pragma once

// The rest of channel.hpp (which includes this at its end): a channel operation started by plain Asio code (async_send,
// async_receive).

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/system_executor.hpp>
#include <memory>
#include <optional>
#include <utility>

#include "coral/detail/core/allocated.hpp"
#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/context_gate.hpp"
#include "coral/error.hpp"
#include "coral/impl/channel_state.hpp"

namespace coral::detail {

// A channel operation started by plain Asio code (async_send / async_receive with any completion
// token). It owns the handler and, for a send, the value; it frees itself when it completes, with
// a copy of the handler's associated allocator taken at the start (by then the handler has been
// moved out, and an allocator need not survive a move). As Asio requires, the handler is never
// invoked inside the initiating function: an immediate completion is posted to the handler's
// associated executor, and so is a later one (see wake). The cancellation slot is cleared there
// too. The handler's associated cancellation slot
// cancels the wait; the operation counts as outstanding work on the handler's executor.
template <class T, class Waiter, class Handler>
class channel_async_op final : public Waiter, public gate_member {
  using work_executor =
      std::decay_t<decltype(asio::prefer(std::declval<asio::associated_executor_t<Handler, asio::system_executor>>(),
                                         asio::execution::outstanding_work.tracked))>;
  using allocator_type = asio::associated_allocator_t<Handler>;
  static constexpr bool sends = std::is_same_v<Waiter, send_waiter<T>>;
  // A send's value, or where a receive's item is put.
  using storage_type = std::conditional_t<sends, std::optional<T>, std::optional<channel_item<T>>>;

  // Runs complete() on the handler's executor, holding the operation's reference; destroyed unrun
  // (its context shut down), it lets go of it. Asio allocates it with the handler's allocator.
  struct completion {
    using allocator_type = channel_async_op::allocator_type;
    counted_ref<channel_async_op> op;
    allocator_type get_allocator() const noexcept { return op->allocator_; }
    void operator()() {
      channel_async_op& o = *op;
      o.complete(std::move(op));
    }
  };

 public:
  // Starts the operation: `operation(state, op)` is the channel's send or receive.
  template <class Operation>
  static void start(std::shared_ptr<channel_state<T>> state, Handler handler, std::optional<T> value,
                    Operation operation) {
    allocator_type allocator(asio::get_associated_allocator(handler));
    auto made = adopt(create_with_allocator<channel_async_op>(allocator, std::move(state), std::move(handler),
                                                              std::move(value), allocator));
    channel_async_op* op = made.get();
    op->linked_ = counted_ref<channel_async_op>(op);
    op->slot_ = asio::get_associated_cancellation_slot(op->handler_);
    // The reference it is made with is the waiting operation's from before the channel can see it
    // (a waker on another thread may take it at once), and goes to its completion.
    op->waiting_ = std::move(made);
    bool done;
    try {
      if (op->slot_.is_connected()) op->slot_.template emplace<channel_cancellation<T>>(op->state_, op);
      done = operation(*op->state_, *op);
    } catch (...) {
      // (Nothing started: the operation leaves its context's gate, and its work with it.)
      if (op->slot_.is_connected()) op->slot_.clear();
      op->leave_gate();
      auto unstarted = std::move(op->waiting_);
      throw;
    }
    if (!done) return;
    try {
      asio::post(*op->work_, completion{std::move(op->waiting_)});
    } catch (...) {
      // (The completion is gone unrun; so is the operation, rather than wait for the shutdown.) A
      // value received goes back into the channel, first in line: the receive did not happen. (A
      // send's value has been handed on, to a receiver that may have run since: it stays there.)
      if constexpr (!sends) {
        try {
          if (op->storage_) op->state_->give_back(std::move(*op->storage_));
        } catch (...) {  // (no room to give it back: it is lost, and the first failure is the caller's)
        }
      }
      op->leave_gate();
      throw;
    }
  }

  // Completed by a counterpart, close() or cancellation (never inside the initiating function):
  // the completion is posted to the handler's executor, through the gate of its context. A waker
  // that took the operation out of the channel claimed a pass on that gate first (see
  // queued_waiter::claim_for_wake), so a context that starts shutting down waits for the post; a
  // cancellation enters the gate here and, if the context is shutting down, leaves the operation
  // to the shutdown. Posted, never run inside the waker's call: there, a handler that starts the
  // next operation would nest each completion in the last one without limit (two handlers passing
  // a value back and forth overflow the stack), one that throws would throw out of the waker (a
  // send, a close(), another thread's code), and any would run while the waker holds passes on
  // the contexts of the other waiters it wakes (close() claims them all first), so that one that
  // destroys such a context would wait for ever for its own thread. A handler with no executor of
  // its own is posted to the system executor, as asio::post does with it.
  void wake(task_segment*) noexcept override {
    // The waker took the operation from the channel, and with it the waiting operation's reference.
    auto taken = std::move(waiting_);
    context_gate* pass = std::exchange(this->pass, nullptr);
    if (!pass) {
      if (!gate_->enter()) return;  // (the shutdown has the link's reference)
      pass = gate_.get();
    }
    {
      // (The copy of the executor goes inside the pass: it may hold a strand of the context.)
      auto executor = *work_;
      asio::post(executor, completion{std::move(taken)});
    }
    pass->leave();
  }

  // `value`: a send's (nullopt for a receive).
  channel_async_op(std::shared_ptr<channel_state<T>> state, Handler handler, std::optional<T> value,
                   const allocator_type& allocator)
      : state_(std::move(state)),
        handler_(std::move(handler)),
        allocator_(allocator),
        work_(asio::prefer(asio::get_associated_executor(handler_, asio::system_executor()),
                           asio::execution::outstanding_work.tracked)),
        gate_(gate_of(asio::query(*work_, asio::execution::context))),
        storage_([&] {
          if constexpr (sends) {
            return std::move(value);
          } else {
            return storage_type();
          }
        }()) {
    if constexpr (sends) {
      this->value = &*storage_;
    } else {
      this->destination = &storage_;
    }
    this->gate = gate_.get();  // (wakers claim a pass on it: see wake)
    gate_->link(*this);
  }

 private:
  // The handler's context is shutting down (nothing can enter its gate any more; the shutdown
  // holds a reference meanwhile). A waiting operation is unlinked from the channel and destroyed,
  // as Asio destroys its pending operations. One a waker already took goes with the waker's
  // reference (its completion is destroyed unrun, or the waker found the gate closed). (Its
  // handler cannot be destroyed here: its memory may be the handler's, through its allocator.)
  void abandon() noexcept override {
    work_.reset();
    if (state_->cancel(*this)) waiting_.reset();
    linked_.reset();
  }
  // Whoever unlinks the operation from its gate (it, or the shutdown) has the link's reference.
  void leave_gate() noexcept {
    if (gate_->unlink(*this)) linked_.reset();
  }

  // (Unlinked by then: the link's reference has gone.) The handler outlives the operation's
  // memory, which may be its own (through its allocator), as in Asio's operations.
  void destroy_self() noexcept override {
    [[maybe_unused]] Handler handler = std::move(handler_);
    destroy_with_allocator(allocator_, this);
  }

  void complete(counted_ref<channel_async_op> self) {
    if (slot_.is_connected()) slot_.clear();
    leave_gate();
    auto handler = std::move(handler_);
    auto error = this->error;
    auto exception = this->exception;
    // The item moves out of the operation's memory, which goes before the handler runs; the value
    // itself moves only into the handler's argument. (A send's storage is only the moved-from
    // shell of a value already handed on.)
    storage_type received = [&] {
      if constexpr (sends) {
        return storage_type();
      } else {
        return std::move(storage_);
      }
    }();
    self.reset();
    if (exception && !error) error = asio::error::invalid_argument;  // no exception_ptr in the signature
    if constexpr (sends) {
      std::move(handler)(error);
    } else if (received) {
      std::move(handler)(error, std::move(received->value()));
    } else {
      std::move(handler)(error, T{});
    }
  }

  std::shared_ptr<channel_state<T>> state_;
  Handler handler_;
  [[no_unique_address]] allocator_type allocator_;
  std::optional<work_executor> work_;
  std::shared_ptr<context_gate> gate_;
  storage_type storage_;
  asio::cancellation_slot slot_;
  // The reference of the operation while it waits in the channel (a waker takes it), and the
  // reference of its link in the gate, which keeps it for the shutdown (see abandon): nothing frees
  // the operation, whose work counts on its context, before the shutdown is done with it.
  counted_ref<channel_async_op> waiting_;
  counted_ref<channel_async_op> linked_;
};

}  // namespace coral::detail
