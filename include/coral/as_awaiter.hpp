#pragma once

#include <future>
#include <utility>

#include "coral/detail/wait/future_awaiter.hpp"

namespace coral {

// `co_await as_awaiter(std::move(future))` waits for a std::future inside a task without blocking
// a thread, and resumes the task on its executor.
template <class R>
detail::future_awaiter<R> as_awaiter(std::future<R> future) {
  return detail::future_awaiter<R>(std::move(future));
}

}  // namespace coral
