#pragma once

// HTTP requests as a client writes them, for the network demos' tests: one request (written as
// its raw bytes) on a connection of its own, or on a connection the test keeps, and its response
// read with Beast.

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <string>

#include "../server_process.hpp"

namespace server_test {

namespace beast = boost::beast;
namespace http = beast::http;

inline std::string host_of(const tcp::endpoint& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

inline std::string get(const tcp::endpoint& server, const std::string& target, const std::string& fields = "",
                       const char* method = "GET") {
  return std::string(method) + " " + target + " HTTP/1.1\r\nHost: " + host_of(server) + "\r\n" + fields + "\r\n";
}

// The next response on `socket` (`head`: the answer to a HEAD, which has no body).
inline http::response<http::string_body> read_response(tcp::socket& socket, beast::flat_buffer& buffer,
                                                       bool head = false) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  parser.skip(head);
  const auto [error, n] = complete([&](auto done) { http::async_read(socket, buffer, parser, done); }, "a response");
  BOOST_REQUIRE_MESSAGE(!error, "response: " << error.message());
  return parser.release();
}

// One request on a connection of its own, written as `raw`: the response.
inline http::response<http::string_body> raw_request(const tcp::endpoint& server, const std::string& raw,
                                                     bool head = false) {
  tcp::socket socket = connect_to(server);
  write_all(socket, raw);
  beast::flat_buffer buffer;
  return read_response(socket, buffer, head);
}

}  // namespace server_test
