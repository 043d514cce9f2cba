// Port of Asio's cpp20/coroutines/refactored_echo_server.cpp: one round trip per child task.
#include <boost/asio/write.hpp>

#include "serve.hpp"

coral::task<> echo_once(tcp::socket& socket) {
  char data[128];
  std::size_t n = co_await socket.async_read_some(asio::buffer(data), coral::use_task);
  co_await asio::async_write(socket, asio::buffer(data, n), coral::use_task);
}

coral::task<> echo(tcp::socket socket) {
  try {
    for (;;) {
      // The asynchronous operations to echo a single chunk of data have been refactored into a
      // separate function: when it ends, the other side has the chunk back.
      co_await echo_once(socket);
    }
  } catch (const std::exception& e) {
    std::printf("echo Exception: %s\n", e.what());
  }
}

coral::task<> listener(tcp::acceptor acceptor) {
  auto executor = co_await asio::this_coro::executor;
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(coral::use_task);
    coral::spawn(executor, echo(std::move(socket)), asio::detached);
  }
}

int main(int argc, char* argv[]) {
  return serve(argc, argv, listener);
}
