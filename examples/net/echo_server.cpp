// TCP echo server: one coral task per connection.
//   echo_server [--port 55555] [--threads 1] [--idle-timeout-ms 30000] [--grace-ms 5000]
// Try it: `nc localhost 55555`. A connection idle for the timeout is closed; SIGINT / SIGTERM shut
// the server down gracefully (server.hpp).
#include <array>
#include <boost/asio/write.hpp>

#include "server.hpp"

using namespace net_demo;

// Until the client has sent something. Waiting for readability, not reading: a wait that loses
// its race to the shutdown has taken no bytes from the client.
coral::task<> readable(tcp::socket& socket) {
  co_await socket.async_wait(tcp::socket::wait_read, coral::use_task);
}

// Sessions end on their own (a closed connection, the idle timeout, the shutdown): an exception
// leaving a session would make the group cancel the others.
coral::task<> echo(tcp::socket socket, const options& o, coral::event& stopping) {
  std::array<char, 4096> data;
  try {
    for (;;) {
      // The idle wait: the one place the first phase of a shutdown ends a session.
      if (!arrived(socket)) {
        auto woke =
            co_await coral::when_any(coral::with_timeout(o.idle_timeout, readable(socket)), until_set(stopping));
        if (woke.index() == 1) break;
      }
      const std::size_t n = co_await socket.async_read_some(asio::buffer(data), coral::use_task);
      co_await asio::async_write(socket, asio::buffer(data, n), coral::use_task);
    }
  } catch (const coral::timeout_error&) {
    // idle for too long: close
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    // the client went away (eof, reset): nothing to do
  }
}

int main(int argc, char* argv[]) {
  const options o = parse_options(argc, argv, "[--port N] [--threads N] [--idle-timeout-ms N] [--grace-ms N]");
  coral::event stopping;
  return run(o, [&](tcp::acceptor& acceptor) {
    return serve(acceptor, o, stopping, [&](tcp::socket socket) { return echo(std::move(socket), o, stopping); });
  });
}
