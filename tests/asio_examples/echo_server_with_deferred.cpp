// Port of Asio's cpp20/coroutines/echo_server_with_deferred.cpp: operations started with
// asio::deferred and awaited in the task.
#include <boost/asio/deferred.hpp>
#include <boost/asio/write.hpp>

#include "serve.hpp"

coral::task<> echo(tcp::socket socket) {
  try {
    char data[1024];
    for (;;) {
      std::size_t n = co_await socket.async_read_some(asio::buffer(data), asio::deferred);
      co_await asio::async_write(socket, asio::buffer(data, n), asio::deferred);
    }
  } catch (const std::exception& e) {
    std::printf("echo Exception: %s\n", e.what());
  }
}

coral::task<> listener(tcp::acceptor acceptor) {
  auto executor = co_await asio::this_coro::executor;
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(asio::deferred);
    coral::spawn(executor, echo(std::move(socket)), asio::detached);
  }
}

int main(int argc, char* argv[]) {
  return serve(argc, argv, listener);
}
