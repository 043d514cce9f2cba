#pragma once

#include "coral/detail/asio.hpp"
#include "coral/detail/executors.hpp"
#include "coral/pool_executor.hpp"

namespace coral::detail {

// True when the calling thread is one that runs `executor` (for the executor types that can tell).
inline bool running_in_this_thread(const asio::any_io_executor& executor) {
  using io_ex = asio::io_context::executor_type;
  using pool_ex = asio::thread_pool::executor_type;
  if (auto* e = io_context_executor_of(executor)) return e->running_in_this_thread();
  if (auto* e = executor.target<pool_ex>()) return e->running_in_this_thread();
  if (auto* e = executor.target<pool_executor>()) return e->running_in_this_thread();
  if (auto* e = executor.target<asio::strand<io_ex>>()) return e->running_in_this_thread();
  if (auto* e = executor.target<asio::strand<pool_ex>>()) return e->running_in_this_thread();
  if (auto* e = executor.target<asio::strand<asio::any_io_executor>>()) return e->running_in_this_thread();
  return false;
}

}  // namespace coral::detail
