// Port of Asio's cpp20/coroutines/echo_server_with_default.cpp and
// echo_server_with_deferred_default.cpp, which differ only in the default token of the sockets'
// executor, given here by the build: use_task or asio::deferred. Operations are awaited without
// naming a token.
#include <boost/asio/deferred.hpp>
#include <boost/asio/write.hpp>

#include "serve.hpp"

using default_token = ECHO_DEFAULT_TOKEN;
using tcp_acceptor = default_token::as_default_on_t<tcp::acceptor>;
using tcp_socket = default_token::as_default_on_t<tcp::socket>;

coral::task<> echo(tcp_socket socket) {
  try {
    char data[1024];
    for (;;) {
      std::size_t n = co_await socket.async_read_some(asio::buffer(data));
      co_await asio::async_write(socket, asio::buffer(data, n));
    }
  } catch (const std::exception& e) {
    std::printf("echo Exception: %s\n", e.what());
  }
}

coral::task<> listener(tcp_acceptor acceptor) {
  auto executor = co_await asio::this_coro::executor;
  for (;;) {
    auto socket = co_await acceptor.async_accept();
    coral::spawn(executor, echo(std::move(socket)), asio::detached);
  }
}

int main(int argc, char* argv[]) {
  return serve(argc, argv, [](tcp::acceptor acceptor) { return listener(tcp_acceptor(std::move(acceptor))); });
}
