#include "coral/scheduler.hpp"

#include <exception>
#include <stdexcept>
#include <vector>

#include "coral/detail/core/result_segment.hpp"
#include "coral/detail/core/task_segment.hpp"

namespace coral {

namespace detail {

scheduled_work::scheduled_work(const asio::any_io_executor& timer_executor, asio::any_io_executor target,
                               std::function<void()> f, std::chrono::steady_clock::duration period)
    : timer_(timer_executor), target_(std::move(target)), f_(std::move(f)), period_(period) {}

void scheduled_work::start(std::chrono::steady_clock::time_point when, std::weak_ptr<scheduler_state> owner) {
  owner_ = std::move(owner);
  timer_.expires_at(when);
  // Arm on the timer's executor: the timer is only ever touched there.
  asio::dispatch(timer_.get_executor(), [self = shared_from_this()] { self->arm(); });
}

void scheduled_work::arm() {
  if (cancelled()) return expired(asio::error::operation_aborted);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code error) { self->expired(error); });
}

void scheduled_work::cancel() {
  cancelled_.store(true, std::memory_order_release);
  asio::dispatch(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

void scheduled_work::expired(boost::system::error_code error) {
  if (error || cancelled()) {
    if (auto owner = owner_.lock()) {
      std::lock_guard lock(owner->mutex);
      owner->pending.erase(shared_from_this());
    }
    return;
  }
  asio::dispatch(target_, [self = shared_from_this()] {
    if (self->cancelled()) return;
    try {
      self->f_();
    } catch (...) {
      report_callback_exception(std::current_exception());
    }
  });
  if (period_ > std::chrono::steady_clock::duration::zero()) {
    timer_.expires_at(timer_.expiry() + period_);
    arm();
  } else {
    expired(asio::error::operation_aborted);  // done: forget it
  }
}

}  // namespace detail

scheduler::scheduler(boost::asio::any_io_executor executor)
    : executor_(std::move(executor)),
      timer_executor_(detail::place(executor_).executor),
      state_(std::make_shared<detail::scheduler_state>()) {}

scheduler::~scheduler() {
  close();
}

scheduler::handle scheduler::schedule(const boost::asio::any_io_executor& target, std::function<void()> f,
                                      clock::time_point when, clock::duration period) {
  auto work = std::make_shared<detail::scheduled_work>(timer_executor_, target, std::move(f), period);
  {
    std::lock_guard lock(state_->mutex);
    if (state_->closed) throw std::logic_error("coral::scheduler: submit after close()");
    state_->pending.insert(work);
  }
  work->start(when, state_);
  return handle(work);
}

void scheduler::close() {
  std::unordered_set<std::shared_ptr<detail::scheduled_work>> pending;
  {
    std::lock_guard lock(state_->mutex);
    state_->closed = true;
    pending.swap(state_->pending);
  }
  for (auto& w : pending) w->cancel();
}

bool scheduler::closed() const {
  std::lock_guard lock(state_->mutex);
  return state_->closed;
}

}  // namespace coral
