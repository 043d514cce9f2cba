#pragma once

#include <coroutine>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "coral/detail/task_root.hpp"

namespace coral::detail {

// The completion handler coral gives to Asio operations: its associated executor is the task's
// executor (so Asio resumes the task there) and its associated cancellation slot is the task's (so
// cancelling the task cancels the operation). It stores the completion arguments in the awaiter and
// resumes the coroutine. Until then it keeps the chain alive; destroyed uninvoked, it releases it.
template <class... Args>
class resuming_handler {
 public:
  using results_type = std::optional<std::tuple<std::decay_t<Args>...>>;
  using executor_type = asio::any_io_executor;
  using cancellation_slot_type = asio::cancellation_slot;

  resuming_handler(results_type& results, std::coroutine_handle<> coroutine, task_context& context)
      : results_(&results), coroutine_(coroutine), context_(&context), keep_(context.root) {}

  executor_type get_executor() const noexcept { return context_->executor; }
  cancellation_slot_type get_cancellation_slot() const noexcept { return context_->root->cancellation_slot(); }

  template <class... A>
  void operator()(A&&... args) {
    // The operation is over: its cancellation handler must not outlive it (it may point into an
    // object the coroutine is about to destroy).
    if (context_->slot.is_connected()) context_->slot.clear();
    results_->emplace(std::forward<A>(args)...);
    auto keep = std::move(keep_);
    coroutine_.resume();
  }

 private:
  results_type* results_;
  std::coroutine_handle<> coroutine_;
  task_context* context_;
  keep_alive keep_;
};

}  // namespace coral::detail
