#pragma once

#include <utility>

#include "coral/detail/asio.hpp"
#include "coral/loop_executor.hpp"

namespace coral {

// The articles' NoopExecutor: work runs immediately on the thread that submits it, so a task on
// it continues on whichever thread resumed it. Timers of such tasks live on the default loop
// (that is the execution context it reports). It is never "non-blocking": asio::post() on it runs
// the function inline too. A task spawned on it runs on a strand of its own, so two threads
// resuming (or cancelling) it at once take turns: the second one's work runs after the first's,
// on the first one's thread (see docs/cancellation.md).
//
// Thread safety: distinct objects: safe. Shared objects: safe.
class inline_executor {
 public:
  friend bool operator==(const inline_executor&, const inline_executor&) noexcept { return true; }

  template <class F>
  void execute(F&& f) const {
    std::forward<F>(f)();
  }

  boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept {
    return detail::default_loop_context();
  }
  static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept {
    return boost::asio::execution::blocking.always;
  }
  inline_executor require(boost::asio::execution::blocking_t::never_t) const noexcept { return *this; }
};

}  // namespace coral
