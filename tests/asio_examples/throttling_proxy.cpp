// Port of Asio's cpp20/channels/throttling_proxy.cpp: each direction of a proxied connection may
// move only as many bytes as the tokens it received; a task per direction produces tokens into
// an Asio channel. Arguments: <port> <target_port> [bytes_per_token token_interval_ms
// number_of_tokens], defaults as the original (20 KiB, 100 ms, 100).
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <iostream>

#include "serve.hpp"

// Asio's operators stay in scope, as in the original: coral's are found by argument-dependent lookup.
using namespace asio::experimental::awaitable_operators;
using namespace std::literals::chrono_literals;
using token_channel = asio::experimental::channel<void(boost::system::error_code, std::size_t)>;

std::size_t number_of_tokens = 100;
std::size_t bytes_per_token = 20 * 1024;
asio::steady_timer::duration token_interval = 100ms;

coral::task<> produce_tokens(std::size_t bytes_per_token, asio::steady_timer::duration token_interval,
                             token_channel& tokens) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    co_await tokens.async_send(boost::system::error_code{}, bytes_per_token, coral::use_task);
    timer.expires_after(token_interval);
    co_await timer.async_wait(coral::use_task);
  }
}

coral::task<> transfer(tcp::socket& from, tcp::socket& to, token_channel& tokens) {
  std::array<unsigned char, 4096> data;
  for (;;) {
    std::size_t bytes_available = co_await tokens.async_receive(coral::use_task);
    while (bytes_available > 0) {
      std::size_t n = co_await from.async_read_some(asio::buffer(data, bytes_available), coral::use_task);
      co_await asio::async_write(to, asio::buffer(data, n), coral::use_task);
      bytes_available -= n;
    }
  }
}

coral::task<> proxy(tcp::socket client, tcp::endpoint target) {
  auto ex = client.get_executor();
  tcp::socket server(ex);
  token_channel client_tokens(ex, number_of_tokens);
  token_channel server_tokens(ex, number_of_tokens);

  co_await server.async_connect(target, coral::use_task);
  co_await (produce_tokens(bytes_per_token, token_interval, client_tokens) && transfer(client, server, client_tokens) &&
            produce_tokens(bytes_per_token, token_interval, server_tokens) && transfer(server, client, server_tokens));
}

coral::task<> listen(tcp::acceptor acceptor, tcp::endpoint target) {
  for (;;) {
    auto [e, client] = co_await acceptor.async_accept(asio::as_tuple(coral::use_task));
    if (!e) {
      auto ex = client.get_executor();
      coral::spawn(ex, proxy(std::move(client), target), asio::detached);
    } else {
      std::cerr << "Accept failed: " << e.message() << "\n";
      asio::steady_timer timer(co_await asio::this_coro::executor);
      timer.expires_after(100ms);
      co_await timer.async_wait(coral::use_task);
    }
  }
}

int main(int argc, char* argv[]) {
  if (argc < 3) {
    std::cerr << "Usage: throttling_proxy <listen_port> <target_port> [bytes_per_token token_interval_ms tokens]\n";
    return 1;
  }
  const tcp::endpoint target(asio::ip::address_v4::loopback(), static_cast<unsigned short>(std::atoi(argv[2])));
  if (argc > 5) {
    bytes_per_token = std::strtoul(argv[3], nullptr, 10);
    token_interval = std::chrono::milliseconds(std::atoi(argv[4]));
    number_of_tokens = std::strtoul(argv[5], nullptr, 10);
  }
  return serve(argc, argv, [target](tcp::acceptor acceptor) { return listen(std::move(acceptor), target); });
}
