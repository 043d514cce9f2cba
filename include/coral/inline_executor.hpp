#pragma once

#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/inline_queue.hpp"
#include "coral/loop_executor.hpp"

namespace coral {

// The articles' NoopExecutor: work runs immediately on the thread that submits it, so a task on
// it continues on whichever thread resumed it. Timers of such tasks live on the default loop
// (that is the execution context it reports). Posted work (asio::post, and every resumption
// coral posts) runs immediately too, unless the thread is already running posted inline work:
// then it runs when that work returns, on the same thread. So a chain of posts (a task yielding
// in a loop, two tasks passing values back and forth) never nests deeper than one step. A task
// spawned on it runs on a strand of its own, so two threads resuming (or cancelling) it at once
// take turns: the second one's work runs after the first's, on the first one's thread (see
// docs/cancellation.md).
//
// Thread safety: distinct objects: safe. Shared objects: safe.
class inline_executor {
 public:
  friend bool operator==(const inline_executor& a, const inline_executor& b) noexcept {
    return a.posting_ == b.posting_;
  }

  template <class F>
  void execute(F&& f) const {
    if (posting_) {
      detail::inline_queue::post(std::forward<F>(f));
    } else {
      std::forward<F>(f)();
    }
  }

  boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept {
    return detail::default_loop_context();
  }
  boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) const noexcept {
    if (posting_) return boost::asio::execution::blocking.never;
    return boost::asio::execution::blocking.always;
  }
  inline_executor require(boost::asio::execution::blocking_t::never_t) const noexcept { return inline_executor(true); }
  inline_executor require(boost::asio::execution::blocking_t::always_t) const noexcept {
    return inline_executor(false);
  }

  inline_executor() noexcept = default;

 private:
  explicit inline_executor(bool posting) noexcept : posting_(posting) {}

  bool posting_ = false;
};

}  // namespace coral
