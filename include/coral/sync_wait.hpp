#pragma once

#include <type_traits>
#include <utility>

#include "coral/spawn.hpp"

namespace coral {

// Runs a task to completion from a plain thread (e.g. main) and returns its value or rethrows its
// exception. A task with a bound executor type runs there; any other task runs on the calling
// thread, on a private io_context, until it ends. Do not call it from inside a task.
template <class T, class Executor>
T sync_wait(task<T, Executor> t) {
  if constexpr (std::is_same_v<Executor, inherit>) {
    asio::io_context context(1);
    auto work = asio::make_work_guard(context);
    auto j = spawn(context, std::move(t));
    j.finally([&context] { context.stop(); });
    context.run();
    return j.get_result();
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
