#pragma once

// The definition of what a task can co_await (promise_base::await_transform): a task, a duration,
// asio::this_coro's executor and cancellation requests, coral's awaitables, an asio::awaitable, a
// deferred Asio operation, and any other awaiter (run as a foreign awaiter).

#include <type_traits>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/promise_base.hpp"
#include "coral/detail/join/task_awaiter.hpp"
#include "coral/detail/wait/awaitable_bridge.hpp"
#include "coral/detail/wait/foreign_awaiter.hpp"
#include "coral/detail/wait/sleep_awaiter.hpp"
#include "coral/use_task.hpp"

namespace coral::detail {

template <class A>
decltype(auto) promise_base::await_transform(A&& awaitable, code_location where) {
  using D = std::remove_cvref_t<A>;
  if constexpr (is_task_v<D>) {
    note_await(where, [] { return std::pair{wait_kind::child_task, std::int64_t{0}}; });
    return make_task_awaiter(std::move(awaitable));
  } else if constexpr (is_duration_v<D>) {
    auto sleep = sleep_awaiter::after(awaitable);
    note_await(where, [&] { return wait_of(sleep); });
    return sleep;
  } else if constexpr (std::is_same_v<D, asio::this_coro::executor_t>) {
    return executor_awaiter{segment_->executor()};
  } else if constexpr (is_this_coro_cancellation_v<D>) {
    return this_coro_cancellation(awaitable);
  } else if constexpr (std::is_same_v<D, task_name_request>) {
#if CORAL_TASK_TRACKING
    if (task_record* record = segment_->record()) rename_record(*record, std::move(awaitable.name));
#endif
    return ready_value<void>{};
  } else if constexpr (requires { typename D::coral_awaitable; }) {
    note_await(where, [&] { return wait_of(awaitable); });
    return awaiter_ref<D>{awaitable};
  } else if constexpr (is_asio_awaitable_v<D>) {
    note_await(where, [] { return std::pair{wait_kind::asio_awaitable, std::int64_t{0}}; });
    // `co_await legacy()` of an asio::awaitable: it runs on the task's executor (on the task's
    // awaitable thread, see awaitable_bridge.hpp), its exception propagates and the task's
    // cancellation reaches it.
    static_assert(std::is_convertible_v<asio::any_io_executor, typename D::executor_type>,
                  "coral: an asio::awaitable awaited in a task must use asio::any_io_executor (the task's executor "
                  "type); else co_await asio::co_spawn(its_executor, std::move(a), coral::use_task)");
    if constexpr (std::is_same_v<typename D::executor_type, asio::any_io_executor>) {
      return asio_awaitable_awaiter<typename D::value_type>(std::move(awaitable), *segment_);
    } else {
      return asio::co_spawn(segment_->executor(), std::move(awaitable), use_task);
    }
  } else if constexpr (asio::is_deferred<D>::value) {
    note_await(where, [] { return std::pair{wait_kind::asio_operation, std::int64_t{0}}; });
    // `co_await timer.async_wait(asio::deferred)`, or a composed deferred operation.
    return std::move(awaitable)(use_task);
  } else {
    note_await(where, [] { return std::pair{wait_kind::foreign, std::int64_t{0}}; });
    return foreign_awaiter<A>(std::forward<A>(awaitable));
  }
}

}  // namespace coral::detail
