#pragma once

// The echo demo's connection: echo_server runs echo() on each accepted TCP socket; the fuzz target
// for the line protocols runs the same function on one end of a socket pair. What the client
// sends comes back as it came; a connection idle for the idle timeout is closed, and so is one
// whose client does not read what it is sent for that long.

#include <array>

#include "server.hpp"

namespace net_demo::echo_demo {

// Sessions end on their own (a closed connection, the idle timeout, the shutdown): an exception
// leaving a session would make the group cancel the others.
template <class Socket>
coral::task<> echo(Socket socket, const options& o, shutdown_signal& stopping) {
  co_await name_session("echo", socket);
  shutdown_signal::session me(stopping, socket, co_await coral::this_task::executor);
  std::array<char, 4096> data;
  try {
    for (;;) {
      if (!co_await wait_for_client(socket, me, o.idle_timeout)) break;  // (the shutdown began)
      const std::size_t n = co_await socket.async_read_some(asio::buffer(data), coral::use_task);
      // A client that stops reading must not hold its session forever: the idle timeout bounds
      // the write too.
      co_await coral::with_timeout(o.idle_timeout, write_all(socket, asio::buffer(data, n)));
    }
  } catch (const coral::timeout_error&) {
    // idle for too long, or not reading what it is sent: close
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    // the client went away (eof, reset): nothing to do
  }
}

}  // namespace net_demo::echo_demo
