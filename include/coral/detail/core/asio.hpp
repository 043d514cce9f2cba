#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/defer.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/system/system_error.hpp>

#include "coral/detail/core/config.hpp"

namespace coral::detail {

// coral's own short name for Boost.Asio, for its internals only. The public namespace declares no
// `asio`: a program's `using namespace coral;` must leave the program's own `asio` (standalone
// Asio's namespace, or an alias of its own) the only one it sees. Code in namespace coral outside
// detail spells `boost::asio`.
namespace asio = boost::asio;

// Asio's handler tracking changes the layout of its classes: a program must define
// BOOST_ASIO_ENABLE_HANDLER_TRACKING everywhere or nowhere, coral's compiled part included. Each
// translation unit using coral refers to the mark of its own setting, which only a library built
// with the same setting defines: a mismatch is a link error naming the cause, not a corrupted
// scheduler at run time.
#if defined(BOOST_ASIO_ENABLE_HANDLER_TRACKING)
extern const int coral_library_built_with_BOOST_ASIO_ENABLE_HANDLER_TRACKING;
CORAL_USED inline const int* const asio_configuration_mark =
    &coral_library_built_with_BOOST_ASIO_ENABLE_HANDLER_TRACKING;
#else
extern const int coral_library_built_without_BOOST_ASIO_ENABLE_HANDLER_TRACKING;
CORAL_USED inline const int* const asio_configuration_mark =
    &coral_library_built_without_BOOST_ASIO_ENABLE_HANDLER_TRACKING;
#endif

}  // namespace coral::detail
