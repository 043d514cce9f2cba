#pragma once

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/default_contexts.hpp"

namespace coral {

// The articles' AsyncExecutor: work runs on the shared asio::thread_pool. A task spawned on it
// runs on a strand of its own (see docs/cancellation.md).
//
// Thread safety: distinct objects: safe. Shared objects: safe.
class pool_executor : public boost::asio::thread_pool::executor_type {
 public:
  pool_executor() noexcept : boost::asio::thread_pool::executor_type(detail::default_pool().get_executor()) {}
};

}  // namespace coral
