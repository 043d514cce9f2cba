// The baseline of the echo benchmark: examples/net/echo_server written with asio::awaitable, as an
// Asio user would: a coroutine per connection on a strand of its own, the same idle timeout (a
// timer raced with the read by Asio's || operator), the same buffer size. With --bare 1, the floor:
// a read and a write per message, no time-out and no strand (a connection's coroutine never has
// two operations pending at once).
//   asio_echo_server [--port 55555] [--threads 1] [--idle-timeout-ms 30000] [--bare 1]
#include <array>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cstdio>
#include <string_view>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

asio::awaitable<void> echo(tcp::socket socket, std::chrono::milliseconds idle) {
  std::array<char, 4096> data;
  asio::steady_timer timer(socket.get_executor());
  try {
    for (;;) {
      timer.expires_after(idle);
      auto got = co_await (socket.async_read_some(asio::buffer(data), asio::use_awaitable) ||
                           timer.async_wait(asio::use_awaitable));
      if (got.index() == 1) break;  // idle for too long
      co_await asio::async_write(socket, asio::buffer(data, std::get<0>(got)), asio::use_awaitable);
    }
  } catch (const std::exception&) {
  }
}

asio::awaitable<void> echo_bare(tcp::socket socket) {
  std::array<char, 4096> data;
  try {
    for (;;) {
      const std::size_t n = co_await socket.async_read_some(asio::buffer(data), asio::use_awaitable);
      co_await asio::async_write(socket, asio::buffer(data, n), asio::use_awaitable);
    }
  } catch (const std::exception&) {
  }
}

asio::awaitable<void> listen(tcp::acceptor& acceptor, std::chrono::milliseconds idle, bool bare) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    if (bare) {
      asio::co_spawn(acceptor.get_executor(), echo_bare(std::move(socket)), asio::detached);
    } else {
      auto strand = asio::make_strand(acceptor.get_executor());
      asio::co_spawn(strand, echo(std::move(socket), idle), asio::detached);
    }
  }
}

int main(int argc, char* argv[]) {
  unsigned short port = 55555;
  int threads = 1;
  std::chrono::milliseconds idle{30'000};
  bool bare = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    if (name == "--port") port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
    if (name == "--threads") threads = std::atoi(argv[i + 1]);
    if (name == "--idle-timeout-ms") idle = std::chrono::milliseconds(std::atoi(argv[i + 1]));
    if (name == "--bare") bare = std::atoi(argv[i + 1]) == 1;
  }
  asio::io_context io(threads);
  tcp::acceptor acceptor(io, {tcp::v4(), port});
  std::printf("listening on %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](auto, auto) { io.stop(); });
  asio::co_spawn(io, listen(acceptor, idle, bare), asio::detached);
  std::vector<std::jthread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { io.run(); });
  io.run();
}
