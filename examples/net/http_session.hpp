#pragma once

// The HTTP/1.1 demo's connection: one coral task per connection, keep-alive and pipelining, a
// fresh Beast parser per request (a reused one keeps the previous request's state, beast #2715).
// http_server runs session() on each accepted TCP socket; the fuzz target runs the same function
// on one end of a socket pair.
//
// Policies (RFC 9112 / 9110):
// - A request line over 8 KiB is answered 414 (its target is too long), header fields over 8 KiB
//   431, a body over 1 MiB 413, a malformed request 400, a request not complete within
//   the request timeout (slowloris) 408. Also 400: a chunk-size line (with its extensions) or a
//   trailer section over 64 KiB, an HTTP/1.1 request without exactly one Host, a Host that is not
//   host[:port], a Transfer-Encoding that is not a list of tokens whose last is chunked (a
//   parameter, "chunked;q=1", fails it; so does any in HTTP/1.0), a target that is neither
//   origin-form (/path?query) nor absolute-form (http://host[:port]/path?query, no userinfo). A
//   coding before the final chunked (gzip, say) gets 501: the server decodes none. An Expect other
//   than 100-continue gets 417. A method the server does not know gets 501 (one it knows that a
//   route does not allow, 405 with Allow); HTTP/2 and later (and before 1.0) 505.
// - HTTP/1.x with x > 1 is served as HTTP/1.1 (RFC 9110 6.2). Every response says HTTP/1.1; one to
//   an HTTP/1.0 client keeps the connection only when the client asked for it ("Connection:
//   keep-alive"), and then says so too.
// - Routes compare the target's path as sent, segment by segment: a percent-encoded byte is not
//   decoded first, so "%2F" never separates segments. The debug routes are served only to the
//   connections of the private listener (http_server's --debug-port, on 127.0.0.1), which serves
//   nothing else; to the others they do not exist (404).
// - Each refusal closes the connection gracefully, and so does any close with requests still
//   unread: the send side first, then what the client still sends is read and dropped (at most
//   16 MiB, for at most the request timeout) before the close, so that a client still sending
//   reads the last response instead of a reset.
// - Expect: 100-continue: "100 Continue" when the body will be read; the final status at once
//   (and the connection closed) when the route will refuse the request anyway (404, 405).
// - HEAD is answered as GET is, without the body. A 405 names the allowed methods.
// - Empty lines before a request line are ignored.
// - Reads and writes have time-outs (beast #2865): a client whose socket accepts nothing of its
//   response for the write timeout is dropped (a stream that makes no progress ends), one that
//   reads however slowly is not. Once a shutdown has begun, responses carry "Connection: close".
// - What a connection holds is bounded whether or not its client reads: a request's body is read
//   a piece (16 KiB) at a time, never whole. POST /echo writes each piece back before it reads the
//   next, so a client that sends and does not read holds one piece: the server stops reading,
//   and TCP stops the client. A body that turns out malformed or too large after its first piece
//   was echoed cuts the response short and closes the connection (its status line has gone);
//   other routes drop the body, and a failure anywhere in it gets its refusal.
// - Past --max-connections, a connection gets "503 Service Unavailable" with "Connection: close"
//   and is closed (server.hpp).
// - GET and HEAD /files/<path> serve the files under --root (static_files.hpp).
// - GET /chat is a chat page (chat_page.hpp); GET /chat/ws with a WebSocket handshake makes the
//   connection a participant of the server's chat room until it ends (websocket_chat.hpp); without
//   one it is 426 Upgrade Required.

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>
#include <boost/json.hpp>
#include <boost/url.hpp>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "chat_page.hpp"
#include "server.hpp"
#include "static_files.hpp"
#include "websocket_chat.hpp"

namespace net_demo::http_demo {

namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace urls = boost::urls;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;
using request_parser = http::request_parser<http::string_body>;

inline constexpr std::size_t header_limit = 8 * 1024;
inline constexpr std::size_t body_limit = 1024 * 1024;
// The longest task dump /debug/tasks lists (?limit=N), and the default.
inline constexpr long dump_limit_max = 1000;
inline constexpr long dump_limit_default = 100;
// What the read buffer may hold: the largest part of a request Beast parses in one piece (a header,
// a chunk-size line with its extensions, a trailer section) must fit in it.
inline constexpr std::size_t read_buffer_limit = 64 * 1024;
// What a refused client may still send before the connection closes (see refuse()).
inline constexpr std::size_t linger_limit = 16 * 1024 * 1024;
// The most of a request's body held at once, and /stream's largest chunk (size=B).
inline constexpr std::size_t body_piece = 16 * 1024;
inline constexpr long longest_chunk = body_piece;

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
  std::chrono::milliseconds write_timeout{10'000};  // without progress in a response's write
  // /sleep's longest sleep and /stream's time between chunks (shorter for the fuzz target).
  std::chrono::milliseconds longest_sleep{60'000};
  std::chrono::milliseconds stream_interval{100};
  // For tests and the fuzz target: sees each request the session is about to answer.
  std::function<void(const request&)> on_request;
  shutdown_signal stopping;
  statistics stats;
  chat_demo::room chat_room;                       // /chat's participants (websocket_chat.hpp)
  std::unique_ptr<static_files::file_root> files;  // /files/, with --root (static_files.hpp)

  // The chat's rules from the server's: a participant is pinged after half the idle timeout of
  // silence, and is gone after the whole of it; the write timeout is the responses'.
  websocket_chat::chat_settings chat_settings() const {
    websocket_chat::chat_settings settings;
    settings.room.write_timeout = write_timeout;
    settings.ping_interval = std::max(o.idle_timeout / 2, std::chrono::milliseconds(1));
    return settings;
  }
};

// What a request asks for, known from its header.
enum class route {
  root,
  sleep,
  stream,
  echo,
  stats,
  chat_page,
  chat_websocket,
  file,
  debug_tasks,
  debug_tasks_json,
  not_found,
  method_not_allowed
};

// The routes a connection is served: the demo's (the public listener), or the debug routes alone
// (the private one).
enum class routes { demo, debug };

template <class Socket, class Message>
coral::task<> write_message(Socket& socket, Message& m) {
  co_await http::async_write(socket, m, coral::use_task);
}

// Whether the connection stays open after `res`, an HTTP/1.1 response to `req`: an HTTP/1.0
// client keeps it only when the response says keep-alive (RFC 9112 9.3, C.2.2).
template <class Response>
void keep_alive(Response& res, const request& req, bool on) {
  res.keep_alive(on);
  if (on && req.version() < 11) res.set(http::field::connection, "keep-alive");
}

inline response text(const request& req, http::status status, std::string body, const char* type = "text/plain") {
  response res{status, 11};
  res.set(http::field::server, "coral");
  res.set(http::field::content_type, type);
  keep_alive(res, req, req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// An answer to a request that is not served: the connection closes after it.
inline response refusal(http::status status, std::string body) {
  response res{status, 11};
  res.set(http::field::server, "coral");
  res.set(http::field::content_type, "text/plain");
  res.keep_alive(false);
  res.body() = std::move(body) + "\n";
  res.prepare_payload();
  return res;
}

// What a connection past --max-connections gets (server.hpp's refusal).
inline std::string over_capacity() {
  std::ostringstream serialized;
  serialized << refusal(http::status::service_unavailable, "too many connections");
  return serialized.str();
}

// Whether `authority` is host[:port] (RFC 3986 3.2.2, 3.2.3): a registered name (percent-encoded
// bytes allowed) or a bracketed IPv6 address, and a port of digits. No userinfo: RFC 9110 4.2.4.
inline bool valid_host_and_port(std::string_view authority) {
  if (authority.starts_with(':')) return false;  // (a port without a host)
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  std::size_t i = 0;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (i = 1; i < close; ++i) {
      if (!hex(authority[i]) && authority[i] != ':' && authority[i] != '.') return false;
    }
    i = close + 1;
  } else {
    for (; i < authority.size() && authority[i] != ':'; ++i) {
      const char c = authority[i];
      if (c == '%') {
        if (i + 2 >= authority.size() || !hex(authority[i + 1]) || !hex(authority[i + 2])) return false;
        i += 2;
      } else if (!std::isalnum(static_cast<unsigned char>(c)) &&
                 std::string_view("-._~!$&'()*+,;=").find(c) == std::string_view::npos) {
        return false;
      }
    }
  }
  if (i == authority.size()) return true;
  if (authority[i] != ':') return false;
  for (++i; i < authority.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(authority[i]))) return false;
  }
  return true;
}

// The target's path and query: origin-form, or absolute-form with an http(s) scheme (RFC 9112
// 3.2.2), whose authority is skipped (Boost.URL 1.81's absolute-URI parser asserts on some
// malformed input, so the scheme and authority are taken apart here). Refers to the request's
// target.
inline std::optional<urls::url_view> target_of(const request& req) {
  std::string_view target = req.target();
  if (!target.starts_with('/')) {
    std::size_t scheme = 0;
    for (std::string_view prefix : {"http://", "https://"}) {
      if (target.size() >= prefix.size() && equal_ignoring_case(target.substr(0, prefix.size()), prefix)) {
        scheme = prefix.size();
      }
    }
    if (scheme == 0) return std::nullopt;
    const std::size_t authority_end = std::min(target.find_first_of("/?", scheme), target.size());
    const std::string_view authority = target.substr(scheme, authority_end - scheme);
    if (authority.empty() || !valid_host_and_port(authority)) return std::nullopt;
    target.remove_prefix(authority_end);
    if (!target.starts_with('/')) {  // (an empty path, and perhaps a query)
      auto relative = urls::parse_relative_ref(target);
      return relative ? std::optional<urls::url_view>(*relative) : std::nullopt;
    }
  }
  auto origin = urls::parse_origin_form(target);
  return origin ? std::optional<urls::url_view>(*origin) : std::nullopt;
}

// The target's path as sent (percent-encoded bytes as they came).
inline std::string_view path_of(const urls::url_view& target) {
  const std::string_view path(target.encoded_path().data(), target.encoded_path().size());
  return path.empty() ? "/" : path;  // (http://host is http://host/)
}

// Whether the target's path is `expected`, segment by segment, compared as sent: "%2F" in a
// segment is three characters of it, never a separator ("/" and "" have no segments).
inline bool path_is(const urls::url_view& target, std::initializer_list<std::string_view> expected) {
  const auto segments = target.encoded_segments();
  return std::equal(segments.begin(), segments.end(), expected.begin(), expected.end(),
                    [](const urls::pct_string_view& segment, std::string_view e) {
                      return std::string_view(segment.data(), segment.size()) == e;
                    });
}

inline std::optional<long> query_number(const std::optional<urls::url_view>& target, std::string_view name) {
  if (!target) return std::nullopt;
  auto it = target->params().find(name);
  if (it == target->params().end() || !(*it).has_value) return std::nullopt;
  const std::string value = (*it).value;
  long n = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (error != std::errc() || end != value.data() + value.size() || n < 0) return std::nullopt;
  return n;
}

// (`target`: target_of(req), taken apart once per request.)
inline route route_of(const request& req, const std::optional<urls::url_view>& target, routes served) {
  if (!target) return route::not_found;
  const bool read_only = req.method() == http::verb::get || req.method() == http::verb::head;
  auto only_if = [](bool allowed, route r) { return allowed ? r : route::method_not_allowed; };
  if (served == routes::debug) {
    if (path_is(*target, {"debug", "tasks"})) return only_if(read_only, route::debug_tasks);
    if (path_is(*target, {"debug", "tasks.json"})) return only_if(read_only, route::debug_tasks_json);
    return route::not_found;
  }
  if (path_is(*target, {})) return only_if(read_only, route::root);
  if (path_is(*target, {"sleep"})) return only_if(read_only, route::sleep);
  if (path_is(*target, {"stream"})) return only_if(read_only, route::stream);
  if (path_is(*target, {"stats"})) return only_if(read_only, route::stats);
  if (path_is(*target, {"chat"})) return only_if(read_only, route::chat_page);
  if (const auto segments = target->encoded_segments(); !segments.empty() && *segments.begin() == "files")
    return only_if(read_only, route::file);
  if (path_is(*target, {"chat", "ws"})) return only_if(read_only, route::chat_websocket);
  if (path_is(*target, {"echo"})) return only_if(req.method() == http::verb::post, route::echo);
  return route::not_found;
}

inline response not_served(const request& req, route r, const std::optional<urls::url_view>& target) {
  if (r == route::not_found) {
    return text(req, http::status::not_found,
                "no such page: " + std::string(target ? path_of(*target) : std::string_view()) + "\n");
  }
  auto res = text(req, http::status::method_not_allowed, "method not allowed\n");
  res.set(http::field::allow, target && path_is(*target, {"echo"}) ? "POST" : "GET, HEAD");
  return res;
}

// The codings of every Transfer-Encoding line, in order; nothing unless each line is a list of
// tokens (RFC 9110 5.6.1, 5.6.2: any byte other than a token's, a comma or white space fails it,
// a parameter's ";" among them).
inline std::optional<std::vector<std::string_view>> transfer_codings(const request& req) {
  std::vector<std::string_view> codings;
  const auto [first, last] = req.equal_range(http::field::transfer_encoding);
  for (auto line = first; line != last; ++line) {
    const http::opt_token_list list(line->value());
    if (!http::validate_list(list)) return std::nullopt;
    for (const auto coding : list) codings.emplace_back(coding.data(), coding.size());
  }
  return codings;
}

// The methods the server knows (RFC 9110 9.3, and PATCH): a route that does not allow one
// answers 405; any other method is 501.
inline bool known_method(http::verb method) {
  using http::verb;
  switch (method) {
    case verb::get:
    case verb::head:
    case verb::post:
    case verb::put:
    case verb::delete_:
    case verb::connect:
    case verb::options:
    case verb::trace:
    case verb::patch:
      return true;
    default:
      return false;
  }
}

// The refusal a request's header earns on its own (version, framing, Host, method, target,
// Expect), if any.
inline std::optional<response> check_header(const request_parser& parser) {
  const request& req = parser.get();
  if (req.count(http::field::transfer_encoding) > 0) {
    // RFC 9112 6.1: HTTP/1.0 has no transfer codings; 6.3: unless the final coding is chunked,
    // the body's length cannot be known. A coding whose syntax is not a token's is no coding the
    // server can agree on with every other reader of the request: refused too.
    const auto codings = transfer_codings(req);
    if (req.version() < 11 || !codings || codings->empty() || !equal_ignoring_case(codings->back(), "chunked") ||
        !parser.chunked())
      return refusal(http::status::bad_request, "unsupported transfer encoding");
    // RFC 9112 6.1: a coding the server does not understand (before the final chunked).
    if (codings->size() > 1) return refusal(http::status::not_implemented, "transfer coding not implemented");
  }
  // RFC 9112 3.2: exactly one Host in HTTP/1.1, at most one before, and a valid one.
  const auto hosts = req.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && req.version() >= 11)) return refusal(http::status::bad_request, "bad Host");
  if (hosts == 1 && !valid_host_and_port(req[http::field::host])) return refusal(http::status::bad_request, "bad Host");
  if (!known_method(req.method())) return refusal(http::status::not_implemented, "method not implemented");
  if (!target_of(req)) return refusal(http::status::bad_request, "bad request target");
  const auto expect = req[http::field::expect];
  if (req.count(http::field::expect) > 0 && req.version() >= 11 && !equal_ignoring_case(expect, "100-continue"))
    return refusal(http::status::expectation_failed, "unsupported expectation");
  return std::nullopt;
}

inline bool expects_continue(const request& req) {
  return req.version() >= 11 && equal_ignoring_case(req[http::field::expect], "100-continue");
}

// Drops the empty lines a client may send before a request line (RFC 9112 2.2) from the front of
// `buffer`; true if something else follows them.
inline bool skip_empty_lines(beast::flat_buffer& buffer) {
  const auto* data = static_cast<const char*>(buffer.data().data());
  std::size_t empty = 0;
  while (empty < buffer.size() && (data[empty] == '\r' || data[empty] == '\n')) ++empty;
  buffer.consume(empty);
  return buffer.size() > 0;
}

// Reads until the request line at the front of `buffer` is complete; false if it does not end
// within the header limit. A client that ends its side in the middle of it sent a partial
// message, as Beast would say (400).
template <class Socket>
coral::task<bool> read_request_line(Socket& socket, beast::flat_buffer& buffer) {
  for (;;) {
    const std::string_view front(static_cast<const char*>(buffer.data().data()), std::min(buffer.size(), header_limit));
    if (front.find('\n') != std::string_view::npos) co_return true;
    if (buffer.size() >= header_limit) co_return false;
    auto [error, n] = co_await socket.async_read_some(buffer.prepare(4096), asio::as_tuple(coral::use_task));
    if (ended_by_client<Socket>(error)) throw boost::system::system_error(http::error::partial_message);
    if (error) throw boost::system::system_error(error);
    buffer.commit(n);
  }
}

// Makes the version of the (complete) request line at the front of `buffer` one that Beast
// parses, which is HTTP/1.0 or 1.1 alone: HTTP/1.x with x > 1 is rewritten HTTP/1.1 (RFC 9110
// 6.2: served as the highest minor version the server has). False for another major version
// (505). A version that is not HTTP/d.d is left for the parser to refuse.
inline bool accept_version(beast::flat_buffer& buffer) {
  char* const line = static_cast<char*>(buffer.data().data());
  std::size_t end = std::string_view(line, buffer.size()).find('\n');
  if (end == std::string_view::npos) return true;  // (read_request_line() saw one)
  if (end > 0 && line[end - 1] == '\r') --end;
  if (end < 9 || line[end - 9] != ' ') return true;
  char* const version = line + end - 8;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (std::string_view(version, 5) != "HTTP/" || !digit(version[5]) || version[6] != '.' || !digit(version[7]))
    return true;
  if (version[5] != '1') return false;
  if (version[7] > '1') version[7] = '1';
  return true;
}

// Reads the next request's header into `parser`: the refusal to send instead of an answer, if any.
template <class Socket>
coral::task<std::optional<response>> receive_request(Socket& socket, beast::flat_buffer& buffer, request_parser& parser,
                                                     routes served) {
  while (!skip_empty_lines(buffer))
    buffer.commit(co_await socket.async_read_some(buffer.prepare(512), coral::use_task));
  // RFC 9112 3: a request line longer than the server reads is 414, its target being what is long.
  if (!co_await read_request_line(socket, buffer))
    co_return refusal(http::status::uri_too_long, "request target too long");
  if (!accept_version(buffer))
    co_return refusal(http::status::http_version_not_supported, "HTTP version not supported");
#if BOOST_BEAST_VERSION >= 356
  // Beast 1.87 and later count the request line in the header limit, which held the fields alone
  // before: the fields keep a limit of their own (the line has its own: 414).
  const auto line = std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()).find('\n') + 1;
  parser.header_limit(static_cast<std::uint32_t>(line + header_limit));
#endif
  // (Beast says partial_message for a header the client ends in the middle of; a TLS stream
  // ended without the client's close_notify, the same.)
  if (auto [error, n] = co_await http::async_read_header(socket, buffer, parser, asio::as_tuple(coral::use_task));
      error) {
    throw boost::system::system_error(stream_end<Socket>::truncated(error) ? http::error::partial_message : error);
  }
  if (auto refused = check_header(parser)) co_return refused;
  if (expects_continue(parser.get())) {
    const auto target = target_of(parser.get());
    const route r = route_of(parser.get(), target, served);
    if (r == route::not_found || r == route::method_not_allowed) {
      auto final_status = not_served(parser.get(), r, target);
      final_status.keep_alive(false);  // (the body is not read)
      co_return final_status;
    }
    static constexpr char continue_line[] = "HTTP/1.1 100 Continue\r\n\r\n";
    co_await write_all(socket, asio::buffer(continue_line, sizeof continue_line - 1));
  }
  co_return std::nullopt;  // (a body is read as the request is answered: answer_with_body)
}

// After the send side's shutdown: reads and drops what the client still sends, until it closes
// its side, for at most the request timeout and linger_limit bytes.
template <class Socket>
coral::task<> linger(Socket& socket, const server_context& server) {
  try {
    co_await coral::with_timeout(server.request_timeout, drain(socket, linger_limit));
  } catch (const coral::timeout_error&) {
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    // the client's end of stream, or its reset
  }
}

// Closes a connection gracefully after its last response: a close with the client's bytes unread
// would reset the connection, and the client, still sending, might never read that response. On a
// plain socket, the send side is shut down, then what the client sends (`unread`: it is known to
// have sent more) is read and dropped (linger); on TLS, close_tls (server.hpp), as long as linger
// when `unread`.
template <class Socket>
coral::task<> end_gracefully(Socket& socket, bool unread, const server_context& server) {
  if constexpr (tls_stream<Socket>) {
    co_await close_tls(socket, unread ? server.request_timeout : std::chrono::milliseconds(close_notify_wait));
  } else {
    boost::system::error_code ignored;
    socket.shutdown(Socket::shutdown_send, ignored);
    if (unread || arrived(socket)) co_await linger(socket, server);
  }
}

// Sends a refusal and closes gracefully.
template <class Socket>
coral::task<> refuse(Socket& socket, response& res, const server_context& server) {
  co_await coral::with_timeout(server.write_timeout, write_message(socket, res));
  co_await end_gracefully(socket, true, server);
}

// GET /stream?n=N: N chunks, one every stream_interval (100 ms), made by a producer task and handed
// over through a channel; a chunk the client's socket accepts nothing of for the write timeout ends
// the stream and the connection. With size=B, each chunk's line is padded with dots to B bytes.
// The producer and the writer are joined with when_all: if the client goes away the write fails
// and when_all cancels the producer wherever it waits. An HTTP/1.0 client, which knows no chunked
// encoding, gets the body as it comes, and the connection's end ends it. HEAD gets the header
// alone. Returns whether the connection stays open.
template <class Socket>
coral::task<bool> stream(Socket& socket, const request& req, long n, std::size_t size, server_context& server) {
  const bool chunked = req.version() >= 11;
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::server, "coral");
  res.set(http::field::content_type, "text/plain");
  keep_alive(res, req, chunked && req.keep_alive() && !server.stopping.is_set());
  res.chunked(chunked);
  http::response_serializer<http::empty_body> serializer{res};
  co_await coral::with_timeout(server.write_timeout, [&]() -> coral::task<> {
    co_await http::async_write_header(socket, serializer, coral::use_task);
  }());
  if (req.method() == http::verb::head) co_return res.keep_alive();

  coral::channel<std::string> chunks(1);
  auto produce = [&]() -> coral::task<> {
    alive counted(server.stats.tasks_alive);
    for (long i = 0; i < n; ++i) {
      co_await coral::sleep_for(server.stream_interval);
      std::string chunk = "chunk " + std::to_string(i);
      if (chunk.size() + 1 < size) chunk.resize(size - 1, '.');
      co_await chunks.send(chunk + "\n");
    }
    chunks.close();
  };
  auto write = [&]() -> coral::task<> {
    while (auto chunk = co_await chunks.next()) {
      if (chunked) {
        co_await write_making_progress(socket, http::make_chunk(asio::buffer(*chunk)), server.write_timeout);
      } else {
        co_await write_making_progress(socket, asio::buffer(*chunk), server.write_timeout);
      }
    }
    if (chunked) co_await write_making_progress(socket, http::make_chunk_last(), server.write_timeout);
  };
  co_await coral::when_all(produce(), write());
  co_return res.keep_alive();
}

// GET or HEAD /files/<path> (static_files.hpp): whether the connection stays open, or nothing if
// there is no such file to serve (404).
template <class Socket>
coral::task<std::optional<bool>> serve_file(Socket& socket, const request& req, const urls::url_view& target,
                                            server_context& server) {
  static_files::file_root& root = *server.files;
  const auto relative = static_files::relative_path(target);
  const int descriptor = relative ? root.open_beneath(*relative) : -1;
  if (descriptor < 0) co_return std::nullopt;
  static_files::open_file file(descriptor, root, co_await coral::this_task::executor);
  struct stat info {};
  if (::fstat(file.native(), &info) != 0 || !S_ISREG(info.st_mode)) co_return std::nullopt;
  const auto size = static_cast<std::uint64_t>(info.st_size);
  const std::string etag = static_files::etag_of(info);

  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::server, "coral");
  res.set(http::field::etag, etag);
  res.set(http::field::accept_ranges, "bytes");
  keep_alive(res, req, req.keep_alive() && !server.stopping.is_set());
  std::uint64_t first = 0;
  std::uint64_t length = size;
  const auto [tags, tags_end] = req.equal_range(http::field::if_none_match);  // (every line: one list)
  if (std::any_of(tags, tags_end,
                  [&](const auto& line) { return static_files::none_match_names(line.value(), etag); })) {
    res.result(http::status::not_modified);
    length = 0;
  } else if (req.count(http::field::range) == 1 &&
             (req.count(http::field::if_range) == 0 || req[http::field::if_range] == etag)) {
    const auto asked = static_files::parse_range(req[http::field::range], size);
    if (asked.unsatisfiable) {
      res.result(http::status::range_not_satisfiable);
      res.set(http::field::content_range, "bytes */" + std::to_string(size));
      res.content_length(0);
      length = 0;
    } else if (asked.range) {
      res.result(http::status::partial_content);
      first = asked.range->first;
      length = asked.range->length;
      res.set(http::field::content_range,
              "bytes " + std::to_string(first) + "-" + std::to_string(first + length - 1) + "/" + std::to_string(size));
    }
  }
  if (res.result() == http::status::ok || res.result() == http::status::partial_content) {
    res.set(http::field::content_type, static_files::content_type(*relative));
    res.content_length(length);
  }
  // The header goes out with the file's first piece, in one write; then a piece at a time, each
  // read then written under the write timeout. (No Nagle delay for a response's last segment:
  // the client's delayed ACK would hold it 40 ms.)
  boost::system::error_code ignored;
  beast::get_lowest_layer(socket).set_option(tcp::no_delay(true), ignored);
  std::ostringstream header;
  header << res.base();
  const std::string head = header.str();
  if (req.method() == http::verb::head || length == 0) {
    co_await write_making_progress(socket, asio::buffer(head), server.write_timeout);
    co_return res.keep_alive();
  }
  std::vector<char> piece(static_cast<std::size_t>(std::min<std::uint64_t>(length, static_files::file_piece)));
  for (std::uint64_t offset = first, left = length; left > 0;) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(left, piece.size()));
    const std::size_t n = co_await file.read_at(offset, asio::buffer(piece.data(), want));
    if (n == 0) throw boost::system::system_error(asio::error::eof);  // (the file shrank: cut short)
    const std::array<asio::const_buffer, 2> bytes{asio::buffer(head.data(), offset == first ? head.size() : 0),
                                                  asio::buffer(piece.data(), n)};
    co_await write_making_progress(socket, bytes, server.write_timeout);
    offset += n;
    left -= n;
  }
  co_return res.keep_alive();
}

// Answers one request; false if the connection must close afterwards.
template <class Socket>
coral::task<bool> answer(Socket& socket, request& req, server_context& server, routes served) {
  alive in_flight(server.stats.requests_in_flight);
  std::optional<response> res;
  const auto target = target_of(req);
  switch (const route r = route_of(req, target, served)) {
    case route::root:
      res = text(req, http::status::ok, "hello from coral\n");
      break;
    case route::sleep:
      if (const auto ms = query_number(target, "ms"); !ms || *ms > server.longest_sleep.count()) {
        res = text(req, http::status::bad_request,
                   "/sleep?ms=N, N from 0 to " + std::to_string(server.longest_sleep.count()) + "\n");
      } else {
        co_await coral::sleep_for(std::chrono::milliseconds(*ms));  // holds no thread
        res = text(req, http::status::ok, "slept " + std::to_string(*ms) + " ms\n");
      }
      break;
    case route::stream: {
      const auto size =
          target && target->params().contains("size") ? query_number(target, "size") : std::optional<long>(0);
      if (const auto n = query_number(target, "n"); !n || *n > 10'000 || !size || *size > longest_chunk) {
        res = text(req, http::status::bad_request,
                   "/stream?n=N[&size=B], N from 0 to 10000, B from 0 to " + std::to_string(longest_chunk) + "\n");
      } else {
        const bool keep_alive = co_await stream(socket, req, *n, static_cast<std::size_t>(*size), server);
        ++server.stats.requests_served;
        co_return keep_alive;
      }
      break;
    }
    case route::file:
      if (server.files) {
        if (const auto kept = co_await serve_file(socket, req, *target, server)) {
          ++server.stats.requests_served;
          co_return *kept;
        }
      }
      res = not_served(req, route::not_found, target);
      break;
    case route::chat_page:
      res = text(req, http::status::ok, std::string(chat_page), "text/html; charset=utf-8");
      break;
    case route::chat_websocket:  // (a request that is not a WebSocket handshake: the session takes those)
      res = text(req, http::status::upgrade_required, "/chat/ws is a WebSocket: the page at /chat joins it\n");
      res->set(http::field::upgrade, "websocket");
      break;
    case route::echo:  // (without a body: answer_with_body echoes one)
      res = text(req, http::status::ok, std::move(req.body()), "application/octet-stream");
      break;
    case route::stats: {
      json::object o;
      o["open_connections"] = server.stats.open_connections.load();
      o["requests_served"] = server.stats.requests_served.load() + 1;  // this one included
      o["tasks_alive"] = server.stats.tasks_alive.load();
      o["requests_in_flight"] = server.stats.requests_in_flight.load() - 1;  // this one excluded
      if (server.files)
        o["file_reads"] = server.files->reads() == static_files::file_reads::io_uring ? "io_uring" : "pool";
      res = text(req, http::status::ok, json::serialize(o) + "\n", "application/json");
      break;
    }
    case route::debug_tasks:
    case route::debug_tasks_json: {
      // What the server's tasks are doing (coral/task_tracking.hpp): listed when the server runs
      // with CORAL_TASK_TRACKING=1 in its environment; at most ?limit=N of them, and how many
      // there are.
      const auto limit = target->params().find("limit") != target->params().end()
                             ? query_number(target, "limit")
                             : std::optional<long>(dump_limit_default);
      if (!limit || *limit > dump_limit_max) {
        res = text(req, http::status::bad_request,
                   "?limit=N, N from 0 to " + std::to_string(dump_limit_max) + " (default " +
                       std::to_string(dump_limit_default) + ")\n");
        break;
      }
      std::ostringstream dump;
      if (r == route::debug_tasks) {
        coral::dump_tasks(dump, static_cast<std::size_t>(*limit));
        res = text(req, http::status::ok, dump.str());
      } else {
        coral::dump_tasks_json(dump, static_cast<std::size_t>(*limit));
        res = text(req, http::status::ok, dump.str(), "application/json");
      }
      break;
    }
    case route::not_found:
    case route::method_not_allowed:
      res = not_served(req, r, target);
      break;
  }
  if (req.method() == http::verb::head) res->body().clear();  // (Content-Length stays: the GET's)
  if (server.stopping.is_set()) res->keep_alive(false);       // no next request will be read
  co_await coral::with_timeout(server.write_timeout, write_message(socket, *res));
  ++server.stats.requests_served;
  co_return res->keep_alive();
}

// Why a request could not be read: the refusal to send, if any (nothing for a client that left).
inline std::optional<response> refusal_for(const boost::system::error_code& e) {
  if (e == http::error::header_limit) return refusal(http::status::request_header_fields_too_large, "header too large");
  if (e == http::error::body_limit) return refusal(http::status::payload_too_large, "body too large");
  if (e == http::error::buffer_overflow)
    return refusal(http::status::bad_request, "chunk-size line or trailers too large");
  if (e.category() == boost::system::error_code(http::error::end_of_stream).category())
    return refusal(http::status::bad_request, "bad request");
  return std::nullopt;
}

// The refusal a failed read of a request earns, if any: 408 for its time-out; nothing for a client
// that left, or for the shutdown's second phase (the failure then goes on).
inline std::optional<response> refusal_for(const boost::system::system_error& failure) {
  if (dynamic_cast<const coral::timeout_error*>(&failure))
    return refusal(http::status::request_timeout, "request timeout");
  if (failure.code() == asio::error::operation_aborted || failure.code() == http::error::end_of_stream) return {};
  return refusal_for(failure.code());
}

// What answering a request with a body came to: a refusal to send (the body failed before any of
// the response was written), or whether the connection stays open.
struct answered_with_body {
  std::optional<response> refused;
  bool keep_alive = false;
};

// Answers a request whose body follows its header (read into `header`), reading the body a
// body_piece at a time, by the request's `deadline`: POST /echo writes each piece back (with the
// request's Content-Length, or chunked as the request was) before it reads the next; other routes
// drop the body and answer as without one.
template <class Socket>
coral::task<answered_with_body> answer_with_body(Socket& socket, beast::flat_buffer& buffer, request_parser& header,
                                                 std::chrono::steady_clock::time_point deadline, server_context& server,
                                                 routes served) {
  http::request_parser<http::buffer_body> parser(std::move(header));
  request head(parser.get().base());  // (the header alone)
  const auto length = parser.content_length();
  std::vector<char> piece(body_piece);
  // The body's next bytes, at least one (none once it has ended).
  auto read_piece = [&]() -> coral::task<std::size_t> {
    auto& body = parser.get().body();
    body.data = piece.data();
    body.size = piece.size();
    while (body.size == piece.size() && !parser.is_done()) {
      auto [error, n] = co_await http::async_read_some(socket, buffer, parser, asio::as_tuple(coral::use_task));
      if (stream_end<Socket>::truncated(error)) throw boost::system::system_error(http::error::partial_message);
      if (error && error != http::error::need_buffer) throw boost::system::system_error(error);
    }
    co_return piece.size() - body.size;
  };
  const bool echo = route_of(head, target_of(head), served) == route::echo;
  std::size_t n = 0;
  try {
    if (echo) {
      n = co_await coral::with_deadline(deadline, read_piece());
    } else {
      co_await coral::with_deadline(deadline, [&]() -> coral::task<> {
        while (!parser.is_done()) co_await read_piece();
      }());
    }
  } catch (const boost::system::system_error& e) {
    // The header limit, reached in the body, is the trailer section's (Beast 1.87 and later apply
    // it there): as for a trailer section that does not fit in the read buffer, 400.
    auto refused = e.code() == http::error::header_limit
                       ? refusal(http::status::bad_request, "chunk-size line or trailers too large")
                       : refusal_for(e);
    if (!refused) throw;
    co_return answered_with_body{std::move(refused)};
  }
  if (!echo) {
    if (server.on_request) server.on_request(head);
    co_return answered_with_body{std::nullopt, co_await answer(socket, head, server, served)};
  }

  alive in_flight(server.stats.requests_in_flight);
  if (server.on_request) server.on_request(head);
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::server, "coral");
  res.set(http::field::content_type, "application/octet-stream");
  keep_alive(res, head, head.keep_alive() && !server.stopping.is_set());
  const bool chunked = !length;  // (HTTP/1.0 has no chunked body: check_header refused it)
  if (chunked) {
    res.chunked(true);
  } else {
    res.content_length(*length);
  }
  http::response_serializer<http::empty_body> serializer{res};
  co_await coral::with_timeout(server.write_timeout, [&]() -> coral::task<> {
    co_await http::async_write_header(socket, serializer, coral::use_task);
  }());
  // From here a failure of the body (malformed, too large, too slow, cut short) cuts the response
  // short: the session ends.
  for (;;) {
    if (n > 0) {
      const asio::const_buffer bytes(piece.data(), n);
      if (chunked) {
        co_await write_making_progress(socket, http::make_chunk(bytes), server.write_timeout);
      } else {
        co_await write_making_progress(socket, bytes, server.write_timeout);
      }
    }
    if (parser.is_done()) break;
    n = co_await coral::with_deadline(deadline, read_piece());
  }
  if (chunked) co_await write_making_progress(socket, http::make_chunk_last(), server.write_timeout);
  ++server.stats.requests_served;
  co_return answered_with_body{std::nullopt, res.keep_alive()};
}

// One connection, until the client leaves, a refusal, an idle timeout or the shutdown; `served`:
// the routes of the listener that accepted it.
template <class Socket>
coral::task<> session(Socket socket, server_context& server, routes served = routes::demo) {
  co_await name_session("http", socket);
  shutdown_signal::session me(server.stopping, socket, co_await coral::this_task::executor);
  alive counted(server.stats.tasks_alive);
  alive open(server.stats.open_connections);
  beast::flat_buffer buffer(read_buffer_limit);
  try {
    for (;;) {
      // Idle between requests, unless a pipelined one is buffered already (server.hpp).
      if (buffer.size() == 0 && !co_await wait_for_client(socket, buffer, me, server.o.idle_timeout)) break;
      request_parser parser;
      parser.header_limit(header_limit);
      parser.body_limit(body_limit);
      std::optional<response> refused;
      // (The header and the body within the request timeout: slowloris.)
      const auto deadline = std::chrono::steady_clock::now() + server.request_timeout;
      try {
        refused = co_await coral::with_deadline(deadline, receive_request(socket, buffer, parser, served));
      } catch (const boost::system::system_error& e) {
        refused = refusal_for(e);
        if (!refused) throw;
      }
      bool keep_alive = false;
      if (!refused && parser.is_done()) {
        request req = parser.release();
        if (server.on_request) server.on_request(req);
        if (beast::websocket::is_upgrade(req) && route_of(req, target_of(req), served) == route::chat_websocket) {
          // A browser's page joining the chat: the connection becomes a WebSocket until it ends.
          // A client speaks only after the handshake's answer: bytes already sent are refused.
          if (!websocket_chat::same_origin(req)) {
            refused = refusal(http::status::forbidden, "a page of another origin cannot join the chat");
          } else if (buffer.size() > 0) {
            refused = refusal(http::status::bad_request, "data sent before the WebSocket handshake was answered");
          } else {
            ++server.stats.requests_served;
            co_await websocket_chat::chat_over_websocket(socket, req, server.chat_room, server.stopping.event(),
                                                         server.chat_settings());
            co_return;
          }
        } else {
          keep_alive = co_await answer(socket, req, server, served);
        }
      } else if (!refused) {
        auto answered = co_await answer_with_body(socket, buffer, parser, deadline, server, served);
        refused = std::move(answered.refused);
        keep_alive = answered.keep_alive;
      }
      if (refused) {
        co_await refuse(socket, *refused, server);
        co_return;
      }
      if (!keep_alive) break;
      // A shutdown began meanwhile: the request in flight is answered, no new one is started
      // (a busy keep-alive client might never leave the idle wait's path).
      if (server.stopping.is_set()) break;
    }
    // Requests the client sent after the last one answered: as after a refusal, the close must not
    // reset the connection before the client has read the last response.
    co_await end_gracefully(socket, buffer.size() > 0, server);
  } catch (const coral::timeout_error&) {
    // Idle for too long, or a response the client does not read: close (a reset, for the latter).
    boost::system::error_code ignored;
    beast::get_lowest_layer(socket).close(ignored);
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    // the client went away (end of stream, reset): only this session is affected
  }
}

}  // namespace net_demo::http_demo
