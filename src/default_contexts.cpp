#include <algorithm>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "coral/event_loop.hpp"
#include "coral/loop_executor.hpp"
#include "coral/new_thread_executor.hpp"
#include "coral/pool_executor.hpp"

namespace coral::detail {

namespace {

// The threads of new_thread_executor. Every thread is joined (finished ones on the next start,
// the rest at exit); none is ever detached. Once closed, work is refused: destroyed unrun.
class thread_registry {
 public:
  void start(std::function<void()> work) {
    std::list<entry> finished;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;  // `work` is destroyed on return, outside the lock
      // A thread whose flag is set is past its work (only returning is left), so joining it
      // below is immediate. The calling thread is never among them: it is still in its work.
      for (auto it = threads_.begin(); it != threads_.end();) {
        auto next = std::next(it);
        if (it->finished->load(std::memory_order_acquire)) finished.splice(finished.end(), threads_, it);
        it = next;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      threads_.push_back(entry{std::thread([work = std::move(work), done]() mutable {
                                 work();
                                 work = nullptr;  // what it holds is released on this thread
                                 done->store(true, std::memory_order_release);
                               }),
                               done});
    }
    for (auto& e : finished) e.thread.join();
  }

  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }

  // Joins every thread, including those started by threads being joined before close().
  void join_all() {
    for (;;) {
      std::list<entry> all;
      {
        std::lock_guard lock(mutex_);
        all.swap(threads_);
      }
      if (all.empty()) break;
      for (auto& e : all) e.thread.join();
    }
  }

 private:
  struct entry {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };

  std::mutex mutex_;
  std::list<entry> threads_;
  bool closed_ = false;
};

// The process-wide contexts behind loop_executor, pool_executor and new_thread_executor, created
// together on first use and shut down together at exit, in this order: every context stops
// running work and refuses new threads; every thread is joined; then the pool and the loop are
// destroyed, which destroys the frames of the tasks still suspended on them (work crossing from
// one to the other meanwhile is queued, never run, and destroyed with its context).
class default_contexts {
 public:
  static default_contexts& get() {
    static default_contexts instance;
    return instance;
  }

  ~default_contexts() {
    loop.stop();
    pool.stop();
    threads.close();
    loop.join();
    pool.join();
    threads.join_all();
  }

  event_loop loop;
  asio::thread_pool pool{std::max(1u, std::thread::hardware_concurrency())};
  thread_registry threads;
};

}  // namespace

asio::io_context& default_loop_context() {
  return default_contexts::get().loop.context();
}

asio::thread_pool& default_pool() {
  return default_contexts::get().pool;
}

void start_thread(std::function<void()> work) {
  default_contexts::get().threads.start(std::move(work));
}

}  // namespace coral::detail
