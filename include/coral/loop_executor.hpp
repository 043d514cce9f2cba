#pragma once

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/default_contexts.hpp"

namespace coral {

// The articles' LooperExecutor: work runs on one shared event-loop thread. Every loop_executor
// refers to the same loop, so any number of task<T, loop_executor> share that one thread.
//
// The first one made creates the shared loop: that may throw (std::bad_alloc, std::system_error when
// a thread cannot start), and the next one made tries again.
//
// Thread safety: distinct objects: safe. Shared objects: safe.
class loop_executor : public boost::asio::io_context::executor_type {
 public:
  loop_executor() : boost::asio::io_context::executor_type(detail::default_loop_context().get_executor()) {}
};

}  // namespace coral
