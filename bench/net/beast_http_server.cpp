// The baseline of the HTTP benchmark: a Beast server with asio::awaitable, as Beast's coroutine
// examples write one: beast::tcp_stream with its own time-outs, a fresh parser with the same
// limits per request, keep-alive, a strand per connection; GET / answers what
// examples/net/http_server answers.
//   beast_http_server [--port 55555] [--threads 1]
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <string_view>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace std::chrono_literals;

asio::awaitable<void> session(beast::tcp_stream stream) {
  beast::flat_buffer buffer;
  try {
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(8 * 1024);
      parser.body_limit(1024 * 1024);
      stream.expires_after(10s);
      co_await http::async_read(stream, buffer, parser, asio::use_awaitable);
      auto req = parser.release();
      http::response<http::string_body> res;
      res.version(req.version());
      res.set(http::field::server, "coral");
      res.set(http::field::content_type, "text/plain");
      res.keep_alive(req.keep_alive());
      if (req.method() == http::verb::get && req.target() == "/") {
        res.result(http::status::ok);
        res.body() = "hello from coral\n";
      } else {
        res.result(http::status::not_found);
        res.body() = "no such page\n";
      }
      res.prepare_payload();
      stream.expires_after(10s);
      co_await http::async_write(stream, res, asio::use_awaitable);
      if (!res.keep_alive()) break;
    }
    stream.socket().shutdown(tcp::socket::shutdown_send);
  } catch (const std::exception&) {
  }
}

asio::awaitable<void> listen(tcp::acceptor& acceptor) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    auto strand = asio::make_strand(acceptor.get_executor());
    asio::co_spawn(strand, session(beast::tcp_stream(std::move(socket))), asio::detached);
  }
}

int main(int argc, char* argv[]) {
  unsigned short port = 55555;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    if (name == "--port") port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
    if (name == "--threads") threads = std::atoi(argv[i + 1]);
  }
  asio::io_context io(threads);
  tcp::acceptor acceptor(io, {tcp::v4(), port});
  std::printf("listening on %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](auto, auto) { io.stop(); });
  asio::co_spawn(io, listen(acceptor), asio::detached);
  std::vector<std::jthread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { io.run(); });
  io.run();
}
