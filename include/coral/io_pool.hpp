#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "coral/detail/core/asio.hpp"

namespace coral {

// N io_contexts, each run by a thread of its own: the arrangement that scales an Asio server
// across cores without threads waking each other (each connection lives on one context). Every
// context keeps running (even with no work) until stop(); the destructor stops them all, joins
// every thread, and then destroys the contexts, which frees the coroutine frames of the tasks
// suspended on any of them, also those waiting on a channel fed from another context of the pool.
//
//   coral::io_pool pool(4);
//   coral::spawn(pool.get_executor(), session(std::move(socket)));  // the next context, in turn
//
// With io_pool::pinning::one_cpu_per_thread, the i-th thread runs only on the i-th CPU the process
// may use (modulo their number): no migrations, each context's data stays in one CPU's caches. A
// machine that also runs other busy threads (a load generator, another server) may do better
// unpinned. (Linux; elsewhere the threads are not pinned.)
//
// Thread safety: distinct objects: safe. Shared objects: safe, except destruction (join() may be
// called from several threads at once: each returns once every thread of the pool has ended).
class io_pool {
 public:
  using executor_type = boost::asio::io_context::executor_type;

  enum class pinning { none, one_cpu_per_thread };

  // `contexts`: how many io_contexts (and threads); 0 means std::thread::hardware_concurrency().
  // Throws std::system_error if a thread cannot be pinned.
  explicit io_pool(std::size_t contexts = 0, pinning pin = pinning::none);
  ~io_pool();
  io_pool(const io_pool&) = delete;
  io_pool& operator=(const io_pool&) = delete;

  std::size_t size() const noexcept { return members_.size(); }

  // The executor of the next context, round-robin.
  executor_type get_executor() noexcept;
  // The context with index `i` (< size()), and its thread's id.
  boost::asio::io_context& context(std::size_t i) { return members_.at(i)->context; }
  std::thread::id thread_id(std::size_t i) const { return members_.at(i)->thread_id; }

  // Makes every thread return as soon as possible; queued work stays queued (and is destroyed
  // with the pool). Callable from any thread, including the pool's own.
  void stop() noexcept;
  // Waits for every thread of the pool to end. Throws std::logic_error when called on one of them.
  void join();

 private:
  struct member {
    boost::asio::io_context context{1};
    boost::asio::executor_work_guard<executor_type> work{context.get_executor()};
    std::thread thread;
    std::thread::id thread_id;  // (once the thread has ended, another thread may get its id)
    std::atomic<bool> ended{false};
  };
  bool runs_in_this_thread() const noexcept;

  std::vector<std::unique_ptr<member>> members_;
  std::atomic<std::size_t> next_{0};
  std::mutex join_mutex_;  // guards the threads' joins
};

}  // namespace coral
