#include <algorithm>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "coral/event_loop.hpp"
#include "coral/loop_executor.hpp"
#include "coral/new_thread_executor.hpp"
#include "coral/pool_executor.hpp"

namespace coral::detail {

asio::io_context& default_loop_context() {
  static event_loop loop;
  return loop.context();
}

asio::thread_pool& default_pool() {
  static asio::thread_pool pool(std::max(1u, std::thread::hardware_concurrency()));
  return pool;
}

namespace {

class thread_registry {
 public:
  // Joins every thread, including those started by threads being joined.
  ~thread_registry() {
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

  void start(std::function<void()> work) {
    std::list<entry> finished;
    {
      std::lock_guard lock(mutex_);
      // A thread whose flag is set is past its work (only returning is left), so joining it
      // below is immediate. The calling thread is never among them: it is still in its work.
      for (auto it = threads_.begin(); it != threads_.end();) {
        auto next = std::next(it);
        if (it->finished->load(std::memory_order_acquire)) finished.splice(finished.end(), threads_, it);
        it = next;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      threads_.push_back(entry{std::thread([work = std::move(work), done] {
                                 work();
                                 done->store(true, std::memory_order_release);
                               }),
                               done});
    }
    for (auto& e : finished) e.thread.join();
  }

 private:
  struct entry {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };

  std::mutex mutex_;
  std::list<entry> threads_;
};

thread_registry& registry() {
  static thread_registry r;
  return r;
}

}  // namespace

void start_thread(std::function<void()> work) {
  registry().start(std::move(work));
}

}  // namespace coral::detail
