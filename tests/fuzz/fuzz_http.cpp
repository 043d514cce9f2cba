// Fuzz target for the HTTP demo's request path: the input is what a client sends on one
// connection, fed to the server's own session() (examples/net/http_session.hpp) on one end of a
// socket pair; the client then closes its sending side and reads everything until the server
// closes. Beyond "no crash, no leak, no hang", what came back must be a well-formed sequence of
// responses: each parses (status line, headers, a body of the length it declares, or chunks that
// end), one final response per request answered plus at most one refusal, interim responses only
// 100 Continue, nothing after a response that says "Connection: close", and the connection
// closed after a refusal. One response may be cut short: the last, a 200 to a POST (/echo, which
// streams the body back as it reads it, and ends the connection when the body fails after its
// first piece).
//
// Built as a libFuzzer target (CORAL_FUZZ=ON, clang; scripts/fuzz.sh http), and without
// libFuzzer as a test that replays the seed corpus (fuzz_http_corpus in CTest).
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "../../examples/net/http_session.hpp"

// Compiled in as in http_server, after Beast (see there).
#include <boost/json/src.hpp>
#include <boost/url/src.hpp>

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using local_socket = asio::local::stream_protocol::socket;

[[noreturn]] void violation(const char* what, std::string_view output) {
  std::fprintf(stderr, "fuzz_http: %s\n--- the server sent ---\n%.*s\n", what, static_cast<int>(output.size()),
               output.data());
  std::abort();
}

// Checks what the server sent, given the methods of the requests it answered, in order.
void check_responses(std::string_view output, const std::vector<http::verb>& answered) {
  const std::string_view all = output;
  std::size_t finals = 0;
  bool closed = false;
  while (!output.empty()) {
    if (closed) violation("bytes after a response that closed the connection", all);
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    parser.header_limit(64 * 1024);
    parser.body_limit(64 * 1024 * 1024);
    if (finals < answered.size() && answered[finals] == http::verb::head) parser.skip(true);
    boost::system::error_code error;
    while (!parser.is_done()) {
      const std::size_t used = parser.put(asio::buffer(output.data(), output.size()), error);
      output.remove_prefix(used);
      if (error == http::error::need_more && !output.empty()) {
        error = {};
        continue;
      }
      if (error == http::error::need_more || (!error && used == 0)) {
        parser.put_eof(error);  // (a body that the connection's end ends, or a truncated response)
        const bool echo_cut_short = parser.is_header_done() && parser.get().result() == http::status::ok &&
                                    finals < answered.size() && answered[finals] == http::verb::post;
        if (error && !echo_cut_short) violation("a response cut short", all);
        break;
      }
      if (error) violation(("a malformed response: " + error.message()).c_str(), all);
    }
    const auto& res = parser.get();
    if (res.result_int() / 100 == 1) {
      if (res.result() != http::status::continue_) violation("an interim response other than 100 Continue", all);
      continue;
    }
    ++finals;
    if (res[http::field::server] != "coral") violation("a response without its Server field", all);
    if (finals > answered.size()) {  // a refusal: the last response
      if (res.keep_alive() || res.result_int() < 400) violation("a refusal that keeps the connection", all);
    }
    closed = !res.keep_alive();
  }
  if (finals < answered.size()) violation("a request answered without a response", all);
  if (finals > answered.size() + 1) violation("more than one response to a request", all);
}

void run_one(std::string_view input) {
  asio::io_context context(1);
  local_socket server_end(context), client(context);
  asio::local::connect_pair(server_end, client);

  net_demo::http_demo::server_context server;
  server.request_timeout = std::chrono::seconds(5);
  server.o.idle_timeout = std::chrono::seconds(5);
  server.longest_sleep = std::chrono::milliseconds(2);
  server.stream_interval = std::chrono::milliseconds(0);
  std::vector<http::verb> answered;
  server.on_request = [&](const net_demo::http_demo::request& req) { answered.push_back(req.method()); };
  auto session = coral::spawn(context, net_demo::http_demo::session(std::move(server_end), server));

  std::string output;
  asio::async_write(client, asio::buffer(input.data(), input.size()), [&](boost::system::error_code, std::size_t) {
    boost::system::error_code ignored;
    client.shutdown(local_socket::shutdown_send, ignored);  // (a write the server refused fails: fine)
  });
  asio::async_read(client, asio::dynamic_buffer(output), [](boost::system::error_code, std::size_t) {});
  context.run();
  if (!session.done()) violation("the session did not end", output);
  session.get_result();  // a session ends without an exception, whatever the client sent
  check_responses(output, answered);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  run_one(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
