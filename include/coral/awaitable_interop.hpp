#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

#include "coral/spawn.hpp"
#include "coral/task.hpp"

namespace coral {

// coral tasks and asio::awaitable, each awaited by the other:
//
//   coral::task<int> f() { int v = co_await legacy_helper(); ... }       // asio::awaitable<int>
//   asio::awaitable<void> g() { co_await coral_void_task(); int v = co_await coral::to_awaitable(coral_task()); }
//
// - In a task, an asio::awaitable<T> (executor any_io_executor) is awaited directly: it runs on the
//   task's executor (co_spawn), the task resumes there, its exception propagates, and the task's
//   cancellation reaches it (as the cancellation of the co_spawn'ed coroutine).
// - In an asio::awaitable, a task<void> is awaited directly (it is an asynchronous operation to
//   Asio: spawned on the awaitable's executor, or on its bound executor type); a task<T> that
//   returns a value goes through to_awaitable(t), because Boost 1.81's awaitable cannot resume from
//   an operation with signature void(std::exception_ptr, T) (it does not compile; see
//   task::operator() in task.hpp).
//   The awaitable resumes on its own executor, the task's exception propagates, and the awaitable's
//   cancellation reaches the task.
template <class T, class Executor>
boost::asio::awaitable<T> to_awaitable(task<T, Executor> t) {
  co_return co_await spawn(co_await boost::asio::this_coro::executor, std::move(t), boost::asio::use_awaitable);
}

}  // namespace coral
