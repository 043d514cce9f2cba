#pragma once

// coral's errors:
//
//   enum class errc { channel_closed = 1, timeout = 2 };    // category "coral", for async_* ops
//   const boost::system::error_category& error_category();
//   class channel_closed : boost::system::system_error;    // code() == errc::channel_closed
//   class timeout_error : boost::system::system_error;     // code() == errc::timeout
//
// Both exceptions derive from std::runtime_error (through system_error), so catch
// (std::exception&) catches them. Cancellation is not an error of coral's: it is
// boost::system::system_error(asio::error::operation_aborted), as in Asio.
//
// The definitions live in detail/ so that coral's internals can use them too.
#include "coral/detail/error_codes.hpp"
