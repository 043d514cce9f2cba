// Port of Asio's cpp20/coroutines/timeout.cpp: an echo session and its watchdog joined with &&;
// the watchdog's exception ends the session. The idle time (10 s there) is the second argument.
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>

#include "serve.hpp"

// Asio's operators stay in scope, as in the original: coral's are found by argument-dependent lookup.
using namespace asio::experimental::awaitable_operators;
using time_point = std::chrono::steady_clock::time_point;

std::chrono::milliseconds idle_time{10'000};

coral::task<> echo(tcp::socket& sock, time_point& deadline) {
  char data[4196];
  for (;;) {
    deadline = std::chrono::steady_clock::now() + idle_time;
    auto n = co_await sock.async_read_some(asio::buffer(data), coral::use_task);
    co_await asio::async_write(sock, asio::buffer(data, n), coral::use_task);
  }
}

coral::task<> watchdog(time_point& deadline) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto now = std::chrono::steady_clock::now();
  while (deadline > now) {
    timer.expires_at(deadline);
    co_await timer.async_wait(coral::use_task);
    now = std::chrono::steady_clock::now();
  }
  throw boost::system::system_error(std::make_error_code(std::errc::timed_out));
}

coral::task<> handle_connection(tcp::socket sock) {
  time_point deadline{};
  co_await (echo(sock, deadline) && watchdog(deadline));
}

coral::task<> listen(tcp::acceptor acceptor) {
  for (;;) {
    coral::spawn(acceptor.get_executor(), handle_connection(co_await acceptor.async_accept(coral::use_task)),
                 asio::detached);
  }
}

int main(int argc, char* argv[]) {
  if (argc > 2) idle_time = std::chrono::milliseconds(std::atoi(argv[2]));
  return serve(argc, argv, [](tcp::acceptor acceptor) { return listen(std::move(acceptor)); });
}
