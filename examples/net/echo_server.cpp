// TCP echo server: one coral task per connection.
//   echo_server [--port 55555] [--threads 1] [--idle-timeout-ms 30000] [--grace-ms 5000]
// Try it: `nc localhost 55555`. A connection idle for the timeout is closed; SIGINT / SIGTERM shut
// the server down gracefully (server.hpp).
#include <array>

#include "server.hpp"

using namespace net_demo;

// Sessions end on their own (a closed connection, the idle timeout, the shutdown): an exception
// leaving a session would make the group cancel the others.
coral::task<> echo(tcp::socket socket, const options& o, coral::event& stopping) {
  std::array<char, 4096> data;
  try {
    for (;;) {
      if (!co_await wait_for_client(socket, stopping, o.idle_timeout)) break;  // (the shutdown began)
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

int main(int argc, char* argv[]) {
  const options o = parse_options(argc, argv, "[--port N] [--threads N] [--idle-timeout-ms N] [--grace-ms N]");
  coral::event stopping;
  return run(o, [&](tcp::acceptor& acceptor, asio::signal_set& signals) {
    return serve(acceptor, signals, o, stopping,
                 [&](tcp::socket socket) { return echo(std::move(socket), o, stopping); });
  });
}
