#include "coral/io_pool.hpp"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <system_error>

namespace coral {

namespace {

#if defined(__linux__)
// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0)
    throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

void pin(std::thread& thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int e = ::pthread_setaffinity_np(thread.native_handle(), sizeof set, &set); e != 0) {
    throw std::system_error(e, std::generic_category(), "pthread_setaffinity_np");
  }
}
#endif

}  // namespace

io_pool::io_pool(std::size_t contexts, pinning pin_threads) {
  if (contexts == 0) contexts = std::max(1u, std::thread::hardware_concurrency());
  members_.reserve(contexts);
  for (std::size_t i = 0; i < contexts; ++i) {
    members_.push_back(std::make_unique<member>());
    // Each context's reactor (its descriptors, on Linux an epoll instance, an eventfd and a
    // timerfd) is made now, as a timer's service makes it, not when the context gets its first
    // I/O object: a process out of descriptors then fails here, not when a connection is handed
    // to a context that has none yet.
    boost::asio::steady_timer reactor_maker(members_.back()->context);
  }
#if defined(__linux__)
  const std::vector<int> cpus = pin_threads == pinning::one_cpu_per_thread ? allowed_cpus() : std::vector<int>{};
#else
  (void)pin_threads;
#endif
  // Started once every context exists: a thread may hand work to another context at once.
  try {
    for (std::size_t i = 0; i < members_.size(); ++i) {
      member& m = *members_[i];
      m.thread = std::thread([&m] {
        m.context.run();
        // (Before the thread ends, so before its id can be another thread's.)
        m.ended.store(true, std::memory_order_release);
      });
      m.thread_id = m.thread.get_id();
#if defined(__linux__)
      if (!cpus.empty()) pin(m.thread, cpus[i % cpus.size()]);
#endif
    }
  } catch (...) {
    stop();
    join();
    throw;
  }
}

io_pool::~io_pool() {
  stop();
  if (runs_in_this_thread()) {
    // From its own thread the pool can neither join that thread nor (by coral's rules) detach it.
    std::fputs("coral: io_pool destroyed from one of its own threads\n", stderr);
    std::terminate();
  }
  join();
  // Every thread has ended before any context goes: a context's shutdown may wake tasks of
  // another one (a channel closed as a frame is destroyed), which is then only queued there.
  while (!members_.empty()) members_.pop_back();
}

io_pool::executor_type io_pool::get_executor() noexcept {
  const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed) % members_.size();
  return members_[i]->context.get_executor();
}

void io_pool::stop() noexcept {
  for (auto& m : members_) m->context.stop();
}

void io_pool::join() {
  if (runs_in_this_thread()) {
    throw std::logic_error("coral::io_pool::join() called on one of the pool's threads: it would wait for itself");
  }
  std::lock_guard lock(join_mutex_);
  for (auto& m : members_) {
    if (m->thread.joinable()) m->thread.join();
  }
}

bool io_pool::runs_in_this_thread() const noexcept {
  const auto self = std::this_thread::get_id();
  for (const auto& m : members_) {
    if (!m->ended.load(std::memory_order_acquire) && m->thread_id == self) return true;
  }
  return false;
}

}  // namespace coral
