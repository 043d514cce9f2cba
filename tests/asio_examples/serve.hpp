#pragma once

// The main() every port shares, as the originals' (an io_context run by one thread, SIGINT and
// SIGTERM stop it with connections still open), except that the port comes from the command line
// (0: any free one) and is printed on the first line of stdout for the test's client.

#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace asio = boost::asio;
using asio::ip::tcp;

// `listener(acceptor)` returns the task that accepts connections.
template <class Listener>
int serve(int argc, char* argv[], Listener listener) {
  try {
    asio::io_context io_context(1);
    const auto port = static_cast<unsigned short>(argc > 1 ? std::atoi(argv[1]) : 55555);
    tcp::acceptor acceptor(io_context, {tcp::v4(), port});
    std::printf("listening on %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
    std::fflush(stdout);

    asio::signal_set signals(io_context, SIGINT, SIGTERM);
    signals.async_wait([&](auto, auto) { io_context.stop(); });

    coral::spawn(io_context.get_executor(), listener(std::move(acceptor)), asio::detached);
    io_context.run();
  } catch (const std::exception& e) {
    std::printf("Exception: %s\n", e.what());
    return 1;
  }
  return 0;
}
