#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/wait/deadline.hpp"
#include "coral/detail/wait/scheduled_work.hpp"

namespace coral {

// Article 004's scheduled executor, on Asio timers (no timer thread). Each function runs on the
// scheduler's executor, or on the executor chosen with on(). The timers are only touched on one
// strand over the scheduler's executor, so any executor works, a multi-threaded thread_pool
// included. Steady clock only. Every submit returns a handle whose cancel() stops the work from
// starting (or, for every(), from starting again).
//
// Thread safety: distinct objects: safe. Shared objects: safe (submit, cancel and close from any
// thread), except destruction.
//
//   coral::scheduler s(ex);
//   s.submit_after([] { ... }, 100ms);
//   auto tick = s.every(1s, [] { ... });
//   s.on(pool_ex).after(2s).submit([] { ... });
//   tick.cancel();
//   s.close();
class scheduler {
 public:
  using clock = std::chrono::steady_clock;

  // Thread safety: distinct objects: safe. Shared objects: safe (cancel() from any thread).
  class handle {
   public:
    handle() = default;
    // A function already running finishes; it is not started again.
    void cancel() {
      if (auto w = work_.lock()) w->cancel();
    }

   private:
    friend class scheduler;
    explicit handle(std::weak_ptr<detail::scheduled_work> w) : work_(std::move(w)) {}
    std::weak_ptr<detail::scheduled_work> work_;
  };

  // Work submitted for a given executor: s.on(ex).after(d).submit(f) or .at(tp).submit(f).
  // Thread safety: distinct objects: safe. Shared objects: unsafe (it is used up by submit()).
  class targeted {
   public:
    targeted after(clock::duration d) && {
      when_ = detail::deadline_after(d);
      return std::move(*this);
    }
    targeted at(clock::time_point tp) && {
      when_ = tp;
      return std::move(*this);
    }
    template <class F>
    handle submit(F f) && {
      return owner_->schedule(target_, std::move(f), when_, {});
    }

   private:
    friend class scheduler;
    targeted(scheduler* owner, boost::asio::any_io_executor target) : owner_(owner), target_(std::move(target)) {}
    scheduler* owner_;
    boost::asio::any_io_executor target_;
    clock::time_point when_ = clock::now();
  };

  explicit scheduler(boost::asio::any_io_executor executor);
  template <detail::execution_context_like Context>
  explicit scheduler(Context& context) : scheduler(detail::erase_executor(context.get_executor())) {}
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  template <class F>
  handle submit(F f) {
    return schedule(executor_, std::move(f), clock::now(), {});
  }
  template <class F>
  handle submit_after(F f, clock::duration d) {
    return schedule(executor_, std::move(f), detail::deadline_after(d), {});
  }
  template <class F>
  handle submit_at(F f, clock::time_point tp) {
    return schedule(executor_, std::move(f), tp, {});
  }
  // Runs f every `period`, the first time one period from now, on fixed-rate deadlines.
  template <class F>
  handle every(clock::duration period, F f) {
    if (period <= clock::duration::zero())
      throw std::invalid_argument("coral::scheduler::every: period must be positive");
    return schedule(executor_, std::move(f), clock::now() + period, period);
  }
  template <class Executor>
  targeted on(const Executor& target) {
    return targeted(this, boost::asio::any_io_executor(target));
  }

  // Cancels all pending work; later submits throw std::logic_error.
  void close();
  bool closed() const;
  const boost::asio::any_io_executor& get_executor() const noexcept { return executor_; }

 private:
  handle schedule(const boost::asio::any_io_executor& target, std::function<void()> f, clock::time_point when,
                  clock::duration period);

  boost::asio::any_io_executor executor_;
  boost::asio::any_io_executor timer_executor_;  // a strand over executor_ (or executor_ if it is serial)
  std::shared_ptr<detail::scheduler_state> state_;
};

}  // namespace coral
