#pragma once

#include <mutex>
#include <thread>

#include "coral/detail/core/asio.hpp"

namespace coral {

// An io_context together with the one thread that runs it. The loop keeps running (even with no
// work) until stop(); the destructor stops it, joins the thread, and then destroys the context,
// which frees the coroutine frames of the tasks suspended on it (whatever they wait on). It can be
// used wherever an execution context can: coral::spawn(loop, t), asio::steady_timer(loop).
//
// Thread safety: distinct objects: safe. Shared objects: safe, except destruction (join() may be
// called from several threads at once: each returns once the loop thread has ended).
class event_loop {
 public:
  using executor_type = boost::asio::io_context::executor_type;

  event_loop();
  ~event_loop();
  event_loop(const event_loop&) = delete;
  event_loop& operator=(const event_loop&) = delete;

  executor_type get_executor() noexcept { return context_.get_executor(); }
  boost::asio::io_context& context() noexcept { return context_; }
  operator boost::asio::io_context&() noexcept { return context_; }
  // The loop thread's id (also after it has ended).
  std::thread::id thread_id() const noexcept { return thread_id_; }

  // Makes the loop thread return as soon as possible; queued work stays queued (and is destroyed
  // with the loop). Callable from any thread, including the loop's own.
  void stop() noexcept;
  // Waits for the loop thread to end. Throws std::logic_error when called on the loop thread,
  // where it could never return.
  void join();

 private:
  boost::asio::io_context context_{1};
  boost::asio::executor_work_guard<executor_type> work_;
  std::thread thread_;
  std::thread::id thread_id_;
  std::mutex join_mutex_;  // guards thread_'s join
};

}  // namespace coral
