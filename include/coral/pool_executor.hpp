#pragma once

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/default_contexts.hpp"

namespace coral {

// The articles' AsyncExecutor: work runs on the shared asio::thread_pool. A task spawned on it
// runs on a strand of its own (see docs/cancellation.md).
//
// The first one made creates the shared pool: that may throw (std::bad_alloc, std::system_error when
// a thread cannot start), and the next one made tries again.
//
// Thread safety: distinct objects: safe. Shared objects: safe.
class pool_executor : public boost::asio::thread_pool::executor_type {
 public:
  pool_executor() : boost::asio::thread_pool::executor_type(detail::default_pool().get_executor()) {}
};

}  // namespace coral
