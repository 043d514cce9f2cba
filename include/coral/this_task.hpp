#pragma once

#include "coral/detail/asio.hpp"

namespace coral::this_task {

// `co_await coral::this_task::executor` gives the task's executor (as asio::this_coro::executor).
inline constexpr boost::asio::this_coro::executor_t executor{};

}  // namespace coral::this_task
