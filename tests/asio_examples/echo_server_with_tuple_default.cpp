// Port of Asio's cpp20/coroutines/echo_server_with_as_single_default.cpp and
// echo_server_with_as_tuple_default.cpp, which differ only in their default token, given here by
// the build: as_single(use_task) or as_tuple(use_task). Errors come back as values.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/as_single.hpp>
#include <boost/asio/write.hpp>

#include "serve.hpp"

using default_token = ECHO_DEFAULT_TOKEN;
using tcp_acceptor = default_token::as_default_on_t<tcp::acceptor>;
using tcp_socket = default_token::as_default_on_t<tcp::socket>;

coral::task<> echo(tcp_socket socket) {
  char data[1024];
  for (;;) {
    auto [e1, nread] = co_await socket.async_read_some(asio::buffer(data));
    if (e1) break;
    auto [e2, nwritten] = co_await asio::async_write(socket, asio::buffer(data, nread));
    if (e2) break;
  }
}

coral::task<> listener(tcp_acceptor acceptor) {
  for (;;) {
    if (auto [e, socket] = co_await acceptor.async_accept(); !e) {
      auto executor = socket.get_executor();
      coral::spawn(executor, echo(std::move(socket)), asio::detached);
    }
  }
}

int main(int argc, char* argv[]) {
  return serve(argc, argv, [](tcp::acceptor acceptor) { return listener(tcp_acceptor(std::move(acceptor))); });
}
