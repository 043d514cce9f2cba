// The baseline of the HTTP benchmark: a Beast server with asio::awaitable, as Beast's coroutine
// examples write one: beast::tcp_stream with its own time-outs, a fresh parser with the same
// limits per request, keep-alive, a strand per connection; GET / answers what
// examples/net/http_server answers. With --io-contexts N, the other arrangement Asio servers
// use: N io_contexts each run by one thread, the acceptor handing each connection to the next
// (accepting onto its executor), no strands. With --bare 1, the floor: a plain socket with no
// time-outs, Beast's default parser limits, no strand. With --tls-cert FILE --tls-key FILE,
// HTTPS as Beast's examples serve it: beast::ssl_stream over the tcp_stream, the handshake under the
// same time-out as a request, async_shutdown at the end (--bare does not apply).
//   beast_http_server [--port 55555] [--threads 1 | --io-contexts N] [--bare 1]
//                     [--tls-cert FILE --tls-key FILE]
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using namespace std::chrono_literals;

bool bare_sessions = false;             // --bare 1
std::optional<asio::ssl::context> tls;  // --tls-cert, --tls-key

// What examples/net/http_server answers to GET /, and 404 to anything else.
http::response<http::string_body> respond(const http::request<http::string_body>& req) {
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
  return res;
}

// Requests until the connection is not kept alive (a failure throws).
template <class Stream>
asio::awaitable<void> serve_requests(Stream& stream) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(8 * 1024);
    parser.body_limit(1024 * 1024);
    beast::get_lowest_layer(stream).expires_after(10s);
    co_await http::async_read(stream, buffer, parser, asio::use_awaitable);
    auto req = parser.release();
    auto res = respond(req);
    beast::get_lowest_layer(stream).expires_after(10s);
    co_await http::async_write(stream, res, asio::use_awaitable);
    if (!res.keep_alive()) break;
  }
}

asio::awaitable<void> plain_session(beast::tcp_stream stream) {
  try {
    co_await serve_requests(stream);
    stream.socket().shutdown(tcp::socket::shutdown_send);
  } catch (const std::exception&) {
  }
}

asio::awaitable<void> tls_session(beast::ssl_stream<beast::tcp_stream> stream) {
  try {
    beast::get_lowest_layer(stream).expires_after(10s);
    co_await stream.async_handshake(asio::ssl::stream_base::server, asio::use_awaitable);
    co_await serve_requests(stream);
    beast::get_lowest_layer(stream).expires_after(10s);
    co_await stream.async_shutdown(asio::use_awaitable);
  } catch (const std::exception&) {
  }
}

asio::awaitable<void> session(tcp::socket socket) {
  if (tls) {
    co_await tls_session(beast::ssl_stream<beast::tcp_stream>(std::move(socket), *tls));
  } else {
    co_await plain_session(beast::tcp_stream(std::move(socket)));
  }
}

asio::awaitable<void> session_bare(tcp::socket socket) {
  beast::flat_buffer buffer;
  try {
    for (;;) {
      http::request<http::string_body> req;
      co_await http::async_read(socket, buffer, req, asio::use_awaitable);
      auto res = respond(req);
      co_await http::async_write(socket, res, asio::use_awaitable);
      if (!res.keep_alive()) break;
    }
    socket.shutdown(tcp::socket::shutdown_send);
  } catch (const std::exception&) {
  }
}

asio::awaitable<void> listen(tcp::acceptor& acceptor) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    if (bare_sessions) {
      asio::co_spawn(acceptor.get_executor(), session_bare(std::move(socket)), asio::detached);
      continue;
    }
    auto strand = asio::make_strand(acceptor.get_executor());
    asio::co_spawn(strand, session(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> listen_for(tcp::acceptor& acceptor, std::vector<std::unique_ptr<asio::io_context>>& contexts) {
  for (std::size_t next = 0;; ++next) {
    auto& context = *contexts[next % contexts.size()];
    tcp::socket socket = co_await acceptor.async_accept(context, asio::use_awaitable);
    if (bare_sessions) {
      asio::co_spawn(context, session_bare(std::move(socket)), asio::detached);
    } else {
      asio::co_spawn(context, session(std::move(socket)), asio::detached);
    }
  }
}

// N io_contexts, one thread each; the first one accepts.
int run_io_contexts(unsigned short port, int n) {
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  for (int i = 0; i < n; ++i) contexts.push_back(std::make_unique<asio::io_context>(1));
  auto& first = *contexts.front();
  tcp::acceptor acceptor(first, {tcp::v4(), port});
  std::printf("listening on %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);
  asio::signal_set signals(first, SIGINT, SIGTERM);
  signals.async_wait([&](auto, auto) {
    for (auto& c : contexts) c->stop();
  });
  asio::co_spawn(first, listen_for(acceptor, contexts), asio::detached);
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  for (auto& c : contexts) work.push_back(asio::make_work_guard(*c));
  std::vector<std::jthread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back([&c = *contexts[static_cast<std::size_t>(i)]] { c.run(); });
  first.run();
  return 0;
}

int main(int argc, char* argv[]) {
  unsigned short port = 55555;
  int threads = 1;
  int io_contexts = 0;
  std::string tls_cert, tls_key;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    if (name == "--tls-cert") tls_cert = argv[i + 1];
    if (name == "--tls-key") tls_key = argv[i + 1];
    if (name == "--port") port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
    if (name == "--threads") threads = std::atoi(argv[i + 1]);
    if (name == "--io-contexts") io_contexts = std::atoi(argv[i + 1]);
    if (name == "--bare") bare_sessions = std::atoi(argv[i + 1]) == 1;
  }
  if (!tls_cert.empty()) {
    tls.emplace(asio::ssl::context::tls_server);
    tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                     asio::ssl::context::single_dh_use);
    tls->use_certificate_chain_file(tls_cert);
    tls->use_private_key_file(tls_key, asio::ssl::context::pem);
    bare_sessions = false;
  }
  if (io_contexts > 0) return run_io_contexts(port, io_contexts);
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
