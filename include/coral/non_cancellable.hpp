#pragma once

#include <type_traits>

#include "coral/detail/core/executors.hpp"
#include "coral/task.hpp"

namespace coral {

// `co_await non_cancellable(cleanup())` runs a task that the awaiting task's cancellation does not
// reach: a cancelled task (whose every suspension fails with operation_aborted) can still await
// its cleanup this way. The child runs on the awaiting task's executor (or on its own bound
// executor type), as a segment of its own; its result and exception propagate as usual. It can
// still be cancelled on its own terms (its own waits and timeouts), and it is still destroyed
// if its execution context shuts down.
//
//   std::exception_ptr failure;
//   try {
//     co_await work();
//   } catch (const boost::system::system_error&) {
//     failure = std::current_exception();  // (no co_await inside a catch block)
//   }
//   if (failure) {
//     co_await coral::non_cancellable(say_goodbye(socket));
//     std::rethrow_exception(failure);
//   }
template <class T, class E>
detail::task_on_awaiter<T> non_cancellable(task<T, E> child) {
  boost::asio::any_io_executor executor;
  if constexpr (!std::is_same_v<E, inherit>) executor = detail::erase_executor(E{});
  return detail::task_on_awaiter<T>(child.release(), std::move(executor), /*shielded=*/true);
}

}  // namespace coral
