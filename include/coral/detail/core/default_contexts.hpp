#pragma once

#include <functional>

#include "coral/detail/core/asio.hpp"

namespace coral::detail {

// The process-wide event loop behind loop_executor, created on first use and stopped and joined
// at exit.
asio::io_context& default_loop_context();

// The process-wide thread pool behind pool_executor (hardware_concurrency threads), created on
// first use and joined at exit.
asio::thread_pool& default_pool();

// Runs `work` on a new thread (new_thread_executor). Threads are joined (finished ones on the next
// start, the rest at exit); none is ever detached.
void start_thread(std::function<void()> work);

}  // namespace coral::detail
