#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/executors.hpp"
#include "coral/detail/wait/deadline.hpp"

namespace coral::detail {

// One piece of scheduled work: a steady_timer on the scheduler's executor and the function to run
// on the target executor when it expires (again every `period`, if set).
class scheduled_work : public std::enable_shared_from_this<scheduled_work> {
 public:
  scheduled_work(const asio::any_io_executor& timer_executor, asio::any_io_executor target, std::function<void()> f,
                 std::chrono::steady_clock::duration period);
  void start(std::chrono::steady_clock::time_point when, std::weak_ptr<struct scheduler_state> owner);
  // Thread-safe; the function will not be started after this returns.
  void cancel();
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }

 private:
  void arm();
  void expired(boost::system::error_code error);

  asio::steady_timer timer_;
  asio::any_io_executor target_;
  std::function<void()> f_;
  std::chrono::steady_clock::duration period_;
  std::atomic<bool> cancelled_{false};
  std::weak_ptr<scheduler_state> owner_;
};

struct scheduler_state {
  std::mutex mutex;
  bool closed = false;
  std::unordered_set<std::shared_ptr<scheduled_work>> pending;
};

}  // namespace coral::detail
