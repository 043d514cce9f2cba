#pragma once

#include <string>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/tracking/task_record.hpp"

namespace coral::this_task {

// `co_await coral::this_task::executor` gives the task's executor (as asio::this_coro::executor).
inline constexpr boost::asio::this_coro::executor_t executor{};

// `co_await coral::this_task::set_name("session 10.0.0.7:5123")` names the task in
// coral::dump_tasks (coral/task_tracking.hpp); it never suspends, and does nothing for a task
// started while tracking was off. Control characters and bytes that are not UTF-8 become '?'.
inline detail::task_name_request set_name(std::string name) {
  return {std::move(name)};
}

}  // namespace coral::this_task
