#pragma once

#include <type_traits>
#include <utility>

#include "coral/loop_executor.hpp"
#include "coral/spawn.hpp"

namespace coral {

// Runs a task to completion from a plain thread (e.g. main), blocking that thread, and returns
// its value or rethrows its exception. A task with a bound executor type runs there; any other
// task runs on the shared event loop (loop_executor). (Not on a private io_context of the calling
// thread: work finishing on other threads could still be posting to it when it is destroyed.)
// Called on the thread the task needs, it throws std::logic_error instead of deadlocking.
template <class T, class Executor>
T sync_wait(task<T, Executor> t) {
  if constexpr (std::is_same_v<Executor, inherit>) {
    return spawn(loop_executor{}, std::move(t)).get_result();
  } else {
    return spawn(std::move(t)).get_result();
  }
}

// Runs a task on `executor` and blocks the calling thread until it ends.
template <class Executor, class T, class E>
T sync_wait(Executor&& executor, task<T, E> t) {
  return spawn(std::forward<Executor>(executor), std::move(t)).get_result();
}

}  // namespace coral
