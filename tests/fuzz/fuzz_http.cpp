// Fuzz target for the HTTP demo's request path: the input is what a client sends on one
// connection, fed to the server's own session() (examples/net/http_session.hpp) on one end of a
// socket pair; the client then closes its sending side and reads everything until the server
// closes. Beyond "no crash, no leak, no hang", what came back must be a well-formed sequence of
// responses: each parses (status line, headers, a body of the length it declares, or chunks that
// end), one final response per request answered plus at most one refusal, interim responses only
// 100 Continue, nothing after a response that says "Connection: close", and the connection
// closed after a refusal. And the rules of what is served: every response says HTTP/1.1; every
// request answered (not refused) is HTTP/1.0 or 1.1 (1.x, x > 1, made 1.1), has a method the
// server knows, and, if it has a Transfer-Encoding, one that is exactly the token chunked (so a
// 2xx never answers any other final coding); a debug route answers only on the private listener.
// Each input runs twice: as a connection of the public listener, and of the private one.
// One response may be cut short: the last, a 200 to a POST (/echo, which streams the body back
// as it reads it, and ends the connection when the body fails after its first piece).
//
// Built as a libFuzzer target (CORAL_FUZZ=ON, clang; scripts/fuzz.sh http), and without
// libFuzzer as a test that replays the seed corpus (fuzz_http_corpus in CTest).
#include <algorithm>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
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

[[noreturn]] void violation_by_request(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz_http: %s\n--- the client sent ---\n%.*s\n", what, static_cast<int>(input.size()),
               input.data());
  std::abort();
}

// Whether `req`'s Transfer-Encoding lines, taken together, are the token chunked alone, as RFC
// 9110 5.6.1 / 9112 6.1 spell it (written here apart from the server's own check).
bool chunked_alone(const net_demo::http_demo::request& req) {
  std::vector<std::string> codings;
  std::string all;
  for (const auto& field : req) {
    if (field.name() == http::field::transfer_encoding) all += std::string(field.value()) + ",";
  }
  std::string element;
  for (const char c : all) {
    if (c != ',') {
      element += c;
      continue;
    }
    const auto first = element.find_first_not_of(" \t");
    const auto last = element.find_last_not_of(" \t");
    if (first != std::string::npos) codings.push_back(element.substr(first, last - first + 1));
    element.clear();
  }
  static constexpr std::string_view tchar = "!#$%&'*+-.^_`|~";
  for (const auto& coding : codings) {
    for (const char c : coding) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && tchar.find(c) == std::string_view::npos) return false;
    }
  }
  if (codings.size() != 1 || codings[0].size() != 7) return false;
  for (std::size_t i = 0; i < 7; ++i) {
    if (std::tolower(static_cast<unsigned char>(codings[0][i])) != "chunked"[i]) return false;
  }
  return true;
}

// What a request the session answered must be (the rules above).
void check_answered(const net_demo::http_demo::request& req, std::string_view input) {
  if (req.version() != 10 && req.version() != 11)
    violation_by_request("a request of another version than 1.0 or 1.1 answered", input);
  static constexpr http::verb known[] = {http::verb::get,     http::verb::head,    http::verb::post,
                                         http::verb::put,     http::verb::delete_, http::verb::connect,
                                         http::verb::options, http::verb::trace,   http::verb::patch};
  if (std::find(std::begin(known), std::end(known), req.method()) == std::end(known))
    violation_by_request("a request with a method the server does not know answered", input);
  if (req.count(http::field::transfer_encoding) > 0 && !chunked_alone(req))
    violation_by_request("a request whose transfer coding is not exactly chunked answered", input);
}

// Checks what the server sent, given the methods of the requests it answered, in order.
void check_responses(std::string_view output, const std::vector<http::verb>& answered,
                     net_demo::http_demo::routes served) {
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
      // (More of the output may complete what was given; with no progress, nothing will.)
      if (error == http::error::need_more && used > 0 && !output.empty()) {
        error = {};
        continue;
      }
      if (error == http::error::need_more || (!error && used == 0)) {
        parser.put_eof(error);  // (a body that the connection's end ends, or a truncated response)
        const bool echo_cut_short = parser.is_header_done() && parser.get().result() == http::status::ok &&
                                    finals < answered.size() && answered[finals] == http::verb::post;
        if (error && !echo_cut_short) violation("a response cut short", all);
        output = {};  // (what is left was part of the response cut short: the connection ended there)
        break;
      }
      if (error) violation(("a malformed response: " + error.message()).c_str(), all);
    }
    const auto& res = parser.get();
    if (res.version() != 11) violation("a response that does not say HTTP/1.1", all);
    if (res.result_int() / 100 == 1) {
      if (res.result() != http::status::continue_) violation("an interim response other than 100 Continue", all);
      continue;
    }
    // (An echo sends back what it was sent, which may look like a dump.)
    const bool echoed = finals < answered.size() && answered[finals] == http::verb::post;
    ++finals;
    if (res[http::field::server] != "coral") violation("a response without its Server field", all);
    const bool dump = !echoed && (res.body().starts_with("coral: ") || res.body().starts_with("{\"schema\":"));
    if (dump && served == net_demo::http_demo::routes::demo) violation("a task dump on the public listener", all);
    if (finals > answered.size()) {  // a refusal: the last response
      if (res.keep_alive() || res.result_int() < 400) violation("a refusal that keeps the connection", all);
    }
    closed = !res.keep_alive();
  }
  if (finals < answered.size()) violation("a request answered without a response", all);
  if (finals > answered.size() + 1) violation("more than one response to a request", all);
}

void run_one(std::string_view input, net_demo::http_demo::routes served) {
  asio::io_context context(1);
  local_socket server_end(context), client(context);
  asio::local::connect_pair(server_end, client);

  net_demo::http_demo::server_context server;
  server.request_timeout = std::chrono::seconds(5);
  server.o.idle_timeout = std::chrono::seconds(5);
  server.longest_sleep = std::chrono::milliseconds(2);
  server.stream_interval = std::chrono::milliseconds(0);
  std::vector<http::verb> answered;
  server.on_request = [&](const net_demo::http_demo::request& req) {
    check_answered(req, input);
    answered.push_back(req.method());
  };
  auto session = coral::spawn(context, net_demo::http_demo::session(std::move(server_end), server, served));

  std::string output;
  asio::async_write(client, asio::buffer(input.data(), input.size()), [&](boost::system::error_code, std::size_t) {
    boost::system::error_code ignored;
    client.shutdown(local_socket::shutdown_send, ignored);  // (a write the server refused fails: fine)
  });
  asio::async_read(client, asio::dynamic_buffer(output), [](boost::system::error_code, std::size_t) {});
  context.run();
  if (!session.done()) violation("the session did not end", output);
  session.get_result();  // a session ends without an exception, whatever the client sent
  check_responses(output, answered, served);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  run_one(input, net_demo::http_demo::routes::demo);
  run_one(input, net_demo::http_demo::routes::debug);
  return 0;
}
