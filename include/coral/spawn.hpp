#pragma once

#include <type_traits>
#include <utility>

#include "coral/detail/core/executors.hpp"
#include "coral/detail/core/spawn_operation.hpp"
#include "coral/job.hpp"
#include "coral/task.hpp"

namespace coral {

// Starts `source` (a task, or a callable returning one) on `executor` (an executor or an
// execution context) and returns its job. A task with a bound executor type runs on that type's
// executor whatever `executor` is. A callable is kept alive until its task ends, so a lambda's
// captures stay valid for the whole task, and is destroyed then (not with the job).
// (Every overload's last parameter, `where`, is left to its default: the place of the call, which
// coral::dump_tasks shows as where the task was spawned.)
template <class Executor, detail::task_source Source>
requires detail::executor_like<std::remove_cvref_t<Executor>> ||
    detail::execution_context_like<std::remove_cvref_t<Executor>>
auto spawn(Executor&& executor, Source&& source, detail::code_location where = detail::code_location::here()) {
  using T = typename detail::task_of_t<Source>::value_type;
  auto root = detail::make_root(detail::erase_executor(detail::executor_of(executor)), std::forward<Source>(source),
                                true, where);
  root.start();
  return job<T>(root.release());
}

// Starts a task with a bound executor type on that executor.
template <class T, class Executor>
job<T> spawn(task<T, Executor> t, detail::code_location where = detail::code_location::here()) {
  static_assert(!std::is_same_v<Executor, inherit>,
                "coral::spawn(task): this task has no executor type (task<T> runs where it is started); "
                "say where: coral::spawn(executor, task), or declare it as task<T, some_executor>");
  if constexpr (!std::is_same_v<Executor, inherit>) {
    auto root = detail::make_root(detail::erase_executor(Executor{}), std::move(t), true, where);
    root.start();
    return job<T>(root.release());
  }
}

// As asio::co_spawn: starts `source` and delivers its outcome to `token` with signature
// void(std::exception_ptr, T) (void(std::exception_ptr) for void tasks). The handler runs on
// its associated executor, by default `executor`; emitting its associated cancellation slot
// cancels the task. With asio::detached, the outcome is dropped, exceptions too (as co_spawn's);
// a task whose exception must not go unnoticed is spawned without a token, or with a handler.
template <class Executor, detail::task_source Source, class CompletionToken>
requires detail::executor_like<std::remove_cvref_t<Executor>> ||
    detail::execution_context_like<std::remove_cvref_t<Executor>>
auto spawn(Executor&& executor, Source&& source, CompletionToken&& token,
           detail::code_location where = detail::code_location::here()) {
  using T = typename detail::task_of_t<Source>::value_type;
  return boost::asio::async_initiate<CompletionToken, typename detail::spawn_signature<T>::type>(
      detail::initiate_spawn{}, token, detail::erase_executor(detail::executor_of(executor)),
      std::decay_t<Source>(std::forward<Source>(source)), where);
}

}  // namespace coral
