#pragma once

#include <functional>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/default_contexts.hpp"
#include "coral/loop_executor.hpp"

namespace coral {

// The articles' NewThreadExecutor: every piece of work runs on a new thread. Timers of tasks on
// it live on the default loop; their completions start new threads. Once the process is exiting
// (the default contexts shutting down), work is refused: destroyed without running.
//
// Thread safety: distinct objects: safe. Shared objects: safe.
class new_thread_executor {
 public:
  friend bool operator==(const new_thread_executor&, const new_thread_executor&) noexcept { return true; }

  template <class F>
  void execute(F&& f) const {
    // std::function needs a copyable target; Asio's handlers are often move-only.
    auto shared = std::make_shared<std::decay_t<F>>(std::forward<F>(f));
    detail::start_thread([shared]() mutable { std::move (*shared)(); });
  }

  boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept {
    return detail::default_loop_context();
  }
  static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept {
    return boost::asio::execution::blocking.never;
  }
  new_thread_executor require(boost::asio::execution::blocking_t::never_t) const noexcept { return *this; }
};

}  // namespace coral
