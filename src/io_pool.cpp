#include "coral/io_pool.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>

namespace coral {

io_pool::io_pool(std::size_t contexts) {
  if (contexts == 0) contexts = std::max(1u, std::thread::hardware_concurrency());
  members_.reserve(contexts);
  for (std::size_t i = 0; i < contexts; ++i) members_.push_back(std::make_unique<member>());
  // Started once every context exists: a thread may hand work to another context at once.
  for (auto& m : members_) {
    m->thread = std::thread([c = &m->context] { c->run(); });
    m->thread_id = m->thread.get_id();
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
    if (m->thread_id == self) return true;
  }
  return false;
}

}  // namespace coral
