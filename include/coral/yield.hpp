#pragma once

#include "coral/detail/wait/yield_awaiter.hpp"

namespace coral {

// `co_await yield();` puts the task at the back of its executor's queue, letting other work run.
// Like every suspension point it fails with operation_aborted once the task is cancelled (before
// or while it waits in the queue).
inline detail::yield_awaiter yield() noexcept {
  return {};
}

}  // namespace coral
