// HTTP/1.1 server: keep-alive and pipelining, one coral task per connection, a fresh Beast parser
// per request (a reused one keeps the previous request's state, beast #2715).
//   http_server [--port 55555] [--threads 1] [--idle-timeout-ms 30000] [--grace-ms 5000]
//               [--request-timeout-ms 10000]
// Try it: curl localhost:55555/  /sleep?ms=500  /stream?n=5  /stats  -d hi localhost:55555/echo
//
// Limits: a header over 8 KiB is answered 431, a body over 1 MiB 413, a malformed request 400, a
// request not complete within the request timeout (slowloris) 408; each closes the connection.
// Reads and writes have time-outs (beast #2865): a client that stops reading its response is
// dropped after the request timeout too.
#include <atomic>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <boost/json/src.hpp>  // (Boost.JSON and Boost.URL compiled in: one translation unit uses them)
#include <boost/url.hpp>
#include <boost/url/src.hpp>
#include <charconv>
#include <optional>
#include <string>

#include "server.hpp"

using namespace net_demo;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace urls = boost::urls;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

constexpr std::size_t header_limit = 8 * 1024;
constexpr std::size_t body_limit = 1024 * 1024;

struct statistics {
  std::atomic<long> open_connections{0};
  std::atomic<long> requests_served{0};
  std::atomic<long> tasks_alive{0};  // sessions and stream producers
  std::atomic<long> requests_in_flight{0};
};

// Counts a task as alive for as long as it runs.
struct alive {
  std::atomic<long>& count;
  explicit alive(std::atomic<long>& c) : count(c) { ++count; }
  ~alive() { --count; }
};

struct server_context {
  options o;
  std::chrono::milliseconds request_timeout{10'000};
  coral::event stopping;
  statistics stats;
};

coral::task<> read_request(tcp::socket& socket, beast::flat_buffer& buffer,
                           http::request_parser<http::string_body>& p) {
  co_await http::async_read(socket, buffer, p, coral::use_task);
}

template <class Message>
coral::task<> write_message(tcp::socket& socket, Message& m) {
  co_await http::async_write(socket, m, coral::use_task);
}

response text(const request& req, http::status status, std::string body, const char* type = "text/plain") {
  response res{status, req.version()};
  res.set(http::field::server, "coral");
  res.set(http::field::content_type, type);
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// An answer to a request that could not be read: the connection closes after it.
response refusal(http::status status, std::string body) {
  response res{status, 11};
  res.set(http::field::server, "coral");
  res.set(http::field::content_type, "text/plain");
  res.keep_alive(false);
  res.body() = std::move(body) + "\n";
  res.prepare_payload();
  return res;
}

std::optional<long> query_number(const request& req, std::string_view name) {
  auto target = urls::parse_origin_form(req.target());
  if (!target) return std::nullopt;
  auto it = target->params().find(name);
  if (it == target->params().end() || !(*it).has_value) return std::nullopt;
  const std::string value = (*it).value;
  long n = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (error != std::errc() || end != value.data() + value.size() || n < 0) return std::nullopt;
  return n;
}

std::string path_of(const request& req) {
  auto target = urls::parse_origin_form(req.target());
  return target ? std::string(target->path()) : std::string();
}

// GET /stream?n=N: N chunks, one every 100 ms, made by a producer task and handed over through a
// channel. The producer and the writer are joined with when_all: if the client goes away the write
// fails and when_all cancels the producer wherever it waits. An HTTP/1.0 client, which knows no
// chunked encoding, gets the body as it comes, and the connection's end ends it. Returns whether
// the connection stays open.
coral::task<bool> stream(tcp::socket& socket, const request& req, long n, server_context& server) {
  const bool chunked = req.version() >= 11;
  http::response<http::empty_body> res{http::status::ok, req.version()};
  res.set(http::field::server, "coral");
  res.set(http::field::content_type, "text/plain");
  res.keep_alive(chunked && req.keep_alive());
  res.chunked(chunked);
  http::response_serializer<http::empty_body> serializer{res};
  co_await coral::with_timeout(server.request_timeout, [&]() -> coral::task<> {
    co_await http::async_write_header(socket, serializer, coral::use_task);
  }());

  coral::channel<std::string> chunks(1);
  auto produce = [&]() -> coral::task<> {
    alive counted(server.stats.tasks_alive);
    for (long i = 0; i < n; ++i) {
      co_await coral::sleep_for(100ms);
      co_await chunks.send("chunk " + std::to_string(i) + "\n");
    }
    chunks.close();
  };
  auto write = [&]() -> coral::task<> {
    while (auto chunk = co_await chunks.next()) {
      if (chunked) {
        co_await coral::with_timeout(server.request_timeout, write_all(socket, http::make_chunk(asio::buffer(*chunk))));
      } else {
        co_await coral::with_timeout(server.request_timeout, write_all(socket, asio::buffer(*chunk)));
      }
    }
    if (chunked) co_await coral::with_timeout(server.request_timeout, write_all(socket, http::make_chunk_last()));
  };
  co_await coral::when_all(produce(), write());
  co_return res.keep_alive();
}

// Answers one request; false if the connection must close afterwards.
coral::task<bool> answer(tcp::socket& socket, request& req, server_context& server) {
  alive in_flight(server.stats.requests_in_flight);
  const std::string path = path_of(req);
  const bool get = req.method() == http::verb::get;
  std::optional<response> res;
  if (path == "/" && get) {
    res = text(req, http::status::ok, "hello from coral\n");
  } else if (path == "/sleep" && get) {
    const auto ms = query_number(req, "ms");
    if (!ms || *ms > 60'000) {
      res = text(req, http::status::bad_request, "/sleep?ms=N, N from 0 to 60000\n");
    } else {
      co_await coral::sleep_for(std::chrono::milliseconds(*ms));  // holds no thread
      res = text(req, http::status::ok, "slept " + std::to_string(*ms) + " ms\n");
    }
  } else if (path == "/stream" && get) {
    const auto n = query_number(req, "n");
    if (!n || *n > 10'000) {
      res = text(req, http::status::bad_request, "/stream?n=N, N from 0 to 10000\n");
    } else {
      const bool keep_alive = co_await stream(socket, req, *n, server);
      ++server.stats.requests_served;
      co_return keep_alive;
    }
  } else if (path == "/echo" && req.method() == http::verb::post) {
    res = text(req, http::status::ok, std::move(req.body()), "application/octet-stream");
  } else if (path == "/stats" && get) {
    json::object o;
    o["open_connections"] = server.stats.open_connections.load();
    o["requests_served"] = server.stats.requests_served.load() + 1;  // this one included
    o["tasks_alive"] = server.stats.tasks_alive.load();
    o["requests_in_flight"] = server.stats.requests_in_flight.load() - 1;  // this one excluded
    res = text(req, http::status::ok, json::serialize(o) + "\n", "application/json");
  } else if (path == "/" || path == "/sleep" || path == "/stream" || path == "/echo" || path == "/stats") {
    res = text(req, http::status::method_not_allowed, "method not allowed\n");
  } else {
    res = text(req, http::status::not_found, "no such page: " + path + "\n");
  }
  if (req.method() == http::verb::head) res->body().clear();  // (Content-Length stays: the GET's)
  co_await coral::with_timeout(server.request_timeout, write_message(socket, *res));
  ++server.stats.requests_served;
  co_return res->keep_alive();
}

// Why a request could not be read: the refusal to send, if any (nothing for a client that left).
std::optional<response> refusal_for(const boost::system::error_code& e) {
  if (e == http::error::header_limit) return refusal(http::status::request_header_fields_too_large, "header too large");
  if (e == http::error::body_limit) return refusal(http::status::payload_too_large, "body too large");
  if (e.category() == boost::system::error_code(http::error::end_of_stream).category())
    return refusal(http::status::bad_request, "bad request");
  return std::nullopt;
}

coral::task<> session(tcp::socket socket, server_context& server) {
  alive counted(server.stats.tasks_alive);
  alive open(server.stats.open_connections);
  beast::flat_buffer buffer;
  try {
    for (;;) {
      // Idle between requests, unless a pipelined one is buffered already (server.hpp).
      if (buffer.size() == 0 && !co_await wait_for_client(socket, server.stopping, server.o.idle_timeout)) break;
      http::request_parser<http::string_body> parser;
      parser.header_limit(header_limit);
      parser.body_limit(body_limit);
      std::optional<response> refused;
      try {
        co_await coral::with_timeout(server.request_timeout, read_request(socket, buffer, parser));
      } catch (const coral::timeout_error&) {
        refused = refusal(http::status::request_timeout, "request timeout");
      } catch (const boost::system::system_error& e) {
        if (e.code() == asio::error::operation_aborted || e.code() == http::error::end_of_stream) throw;
        refused = refusal_for(e.code());
        if (!refused) throw;
      }
      if (refused) {
        co_await coral::with_timeout(server.request_timeout, write_message(socket, *refused));
        break;
      }
      request req = parser.release();
      if (!co_await answer(socket, req, server)) break;
      // A shutdown began meanwhile: the request in flight is answered, no new one is started
      // (a busy keep-alive client might never leave the idle wait's path).
      if (server.stopping.is_set()) break;
    }
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_send, ignored);
  } catch (const coral::timeout_error&) {
    // idle for too long, or a response the client does not read: close
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    // the client went away (end of stream, reset): only this session is affected
  }
}

int main(int argc, char* argv[]) {
  std::chrono::milliseconds request_timeout{10'000};
  std::vector<char*> common{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--request-timeout-ms" && i + 1 < argc) {
      request_timeout = std::chrono::milliseconds(std::strtoul(argv[++i], nullptr, 10));
    } else {
      common.push_back(argv[i]);
    }
  }
  server_context server;
  server.o = parse_options(static_cast<int>(common.size()), common.data(),
                           "[--port N] [--threads N] [--idle-timeout-ms N] [--grace-ms N] [--request-timeout-ms N]");
  server.request_timeout = request_timeout;
  return run(server.o, [&](tcp::acceptor& acceptor, asio::signal_set& signals) {
    return serve(acceptor, signals, server.o, server.stopping,
                 [&](tcp::socket socket) { return session(std::move(socket), server); });
  });
}
