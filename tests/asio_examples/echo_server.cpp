// Port of Asio's cpp20/coroutines/echo_server.cpp. Built twice: as is, and with
// BOOST_ASIO_ENABLE_HANDLER_TRACKING, where the token records where each operation started.
#include <boost/asio/write.hpp>

#include "serve.hpp"

#if defined(BOOST_ASIO_ENABLE_HANDLER_TRACKING)
#define use_task coral::use_task_t(__FILE__, __LINE__, __PRETTY_FUNCTION__)
#else
using coral::use_task;
#endif

coral::task<> echo(tcp::socket socket) {
  try {
    char data[1024];
    for (;;) {
      std::size_t n = co_await socket.async_read_some(asio::buffer(data), use_task);
      co_await asio::async_write(socket, asio::buffer(data, n), use_task);
    }
  } catch (const std::exception& e) {
    std::printf("echo Exception: %s\n", e.what());
  }
}

coral::task<> listener(tcp::acceptor acceptor) {
  auto executor = co_await asio::this_coro::executor;
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(use_task);
    coral::spawn(executor, echo(std::move(socket)), asio::detached);
  }
}

int main(int argc, char* argv[]) {
  return serve(argc, argv, listener);
}
