// HTTPS in the HTTP demo (http_server --tls-cert --tls-key), driven as a user would drive it: a
// throw-away certificate authority and server certificate made with the openssl command, then
// TLS clients of this test's own (Beast), curl and http_client.
//   test_net_tls --run_test=<scenario> -- <http_server> [--threads N | --io-pool N]
// The environment names the other programs: CORAL_HTTP_CLIENT (examples/net/http_client).
#define BOOST_TEST_MODULE coral HTTPS demo
#include <netinet/tcp.h>
#include <stdlib.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <filesystem>
#include <fstream>
#include <utility>

#include "../server_process.hpp"

using namespace server_test;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
namespace websocket = beast::websocket;

namespace {

// A certificate authority made for this run, a server certificate it signed for localhost and
// 127.0.0.1, and a second authority that signed nothing of the server's. Removed at the end.
struct certificates {
  std::filesystem::path dir;
  certificates() {
    char name[] = "/tmp/coral-tls-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
    std::ofstream(dir / "server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    for (const std::string& step : {
             "openssl req -x509" + key + " -keyout ca.key -out ca.pem -days 2 -subj /CN=coral-test-CA",
             "openssl req -x509" + key + " -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=other-CA",
             "openssl req" + key + " -keyout server.key -out server.csr -subj /CN=localhost",
             std::string("openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem"
                         " -days 2 -extfile server.ext"),
         }) {
      const auto [said, status] = run_command("cd " + dir.string() + " && " + step);
      BOOST_REQUIRE_MESSAGE(status == 0, step << ": " << said);
    }
  }
  ~certificates() { std::filesystem::remove_all(dir); }
  std::string file(const char* name) const { return (dir / name).string(); }
};

// The server's arguments: a free port, HTTPS with `certs`, the threads given after the program,
// and `more`.
std::vector<std::string> arguments(const certificates& certs, std::vector<std::string> more = {}) {
  return server_arguments(std::move(more),
                          {"--tls-cert", certs.file("server.pem"), "--tls-key", certs.file("server.key")});
}

ssl::context client_context(const std::string& authority) {
  ssl::context tls(ssl::context::tls_client);
  tls.load_verify_file(authority);
  return tls;
}

// A client that checks the server's certificate against `authority` and the name 127.0.0.1.
class tls_client {
 public:
  tls_client(const tcp::endpoint& server, const std::string& authority)
      : tls_(client_context(authority)), stream_(connect_to(server), tls_) {
    stream_.set_verify_mode(ssl::verify_peer);
    stream_.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  }
  boost::system::error_code handshake() {
    return complete([&](auto done) { stream_.async_handshake(ssl::stream_base::client, done); }, "the handshake").first;
  }
  void write(const std::string& data) {
    const auto [error, n] = complete([&](auto done) { asio::async_write(stream_, asio::buffer(data), done); }, "write");
    BOOST_REQUIRE_MESSAGE(!error, "write: " << error.message());
  }
  http::response<http::string_body> response() {
    http::response<http::string_body> res;
    const auto [error, n] = complete([&](auto done) { http::async_read(stream_, buffer_, res, done); }, "a response");
    BOOST_REQUIRE_MESSAGE(!error, "read a response: " << error.message());
    return res;
  }
  // How the server ends the connection, after any data: asio::error::eof when it closes TLS
  // cleanly (its close_notify), ssl::error::stream_truncated when it just closes the socket.
  boost::system::error_code wait_for_close() {
    char sink[256];
    for (;;) {
      const auto [error, n] =
          complete([&](auto done) { stream_.async_read_some(asio::buffer(sink), done); }, "the server's close");
      if (error) return error;
    }
  }
  // The client's close_notify, and the server's in return: its error (none when the server
  // answers with its own).
  boost::system::error_code shutdown() {
    return complete([&](auto done) { stream_.async_shutdown(done); }, "the TLS shutdown").first;
  }
  tcp::socket& socket() { return stream_.next_layer(); }

 private:
  ssl::context tls_;
  beast::ssl_stream<tcp::socket> stream_;
  beast::flat_buffer buffer_;
};

std::string field(const http::response<http::string_body>& res, http::field name) {
  return std::string(res[name]);
}

}  // namespace

// Keep-alive, two pipelined requests (the second read from the socket with the first, so that it
// waits inside the TLS stream, not on the socket), a chunked stream, a body echoed across many TLS
// records, and a last request whose answer the server follows with its close_notify.
BOOST_AUTO_TEST_CASE(https_keep_alive_pipelining_streams_and_a_clean_close) {
  certificates certs;
  server_process server(arguments(certs));
  tls_client client(server.endpoint(), certs.file("ca.pem"));
  BOOST_REQUIRE(!client.handshake());

  // Two TLS records in one TCP segment (corked): the server's first read from the socket takes
  // both, and the stream hands out the first; the second is in the stream when the session waits.
  using cork = asio::detail::socket_option::boolean<IPPROTO_TCP, TCP_CORK>;
  client.socket().set_option(cork(true));
  client.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  client.write("GET /stream?n=3 HTTP/1.1\r\nHost: a\r\n\r\n");
  client.socket().set_option(cork(false));
  auto first = client.response();
  BOOST_TEST(first.result_int() == 200);
  BOOST_TEST(first.version() == 11);
  BOOST_TEST(first.keep_alive());
  BOOST_TEST(field(first, http::field::server) == "coral");
  BOOST_TEST(field(first, http::field::content_length) == "17");
  BOOST_TEST(first.body() == "hello from coral\n");
  auto streamed = client.response();
  BOOST_TEST(streamed.result_int() == 200);
  BOOST_TEST(field(streamed, http::field::transfer_encoding) == "chunked");
  BOOST_TEST(streamed.body() == "chunk 0\nchunk 1\nchunk 2\n");

  const std::string body = pattern(200'000, 3);
  client.write("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  auto echoed = client.response();
  BOOST_TEST(echoed.result_int() == 200);
  BOOST_TEST(field(echoed, http::field::content_type) == "application/octet-stream");
  BOOST_TEST((echoed.body() == body));

  client.write("GET /stats HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  auto last = client.response();
  BOOST_TEST(last.result_int() == 200);
  BOOST_TEST(!last.keep_alive());
  BOOST_TEST(last.body().find("\"open_connections\":1,") != std::string::npos, last.body());
  const auto closed = client.wait_for_close();
  BOOST_TEST((closed == asio::error::eof), closed.message());  // a close_notify, not a truncation
  BOOST_TEST(server.interrupt() == 0);
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos, server.output());
}

// curl and http_client check the certificate against the authority and fetch; against another
// authority both refuse the server.
BOOST_AUTO_TEST_CASE(https_curl_and_http_client_verify_the_server) {
  certificates certs;
  server_process server(arguments(certs));
  const std::string port = std::to_string(server.endpoint().port());
  const auto [curl_said, curl_status] =
      run_command("curl -sS -i --cacert " + certs.file("ca.pem") + " https://127.0.0.1:" + port + "/");
  BOOST_TEST(curl_status == 0, curl_said);
  BOOST_TEST(curl_said.rfind("HTTP/1.1 200 OK\r\n", 0) == 0, curl_said);
  BOOST_TEST(curl_said.find("\r\n\r\nhello from coral\n") != std::string::npos, curl_said);
  const auto [refused_said, refused_status] =
      run_command("curl -sS --cacert " + certs.file("other-ca.pem") + " https://127.0.0.1:" + port + "/");
  BOOST_TEST(refused_status == 60, refused_said);  // curl's "peer certificate cannot be authenticated"

  const char* client = std::getenv("CORAL_HTTP_CLIENT");
  BOOST_REQUIRE_MESSAGE(client != nullptr, "CORAL_HTTP_CLIENT names http_client");
  const auto [fetched, fetched_status] =
      run_command(std::string(client) + " --cacert " + certs.file("ca.pem") + " https://127.0.0.1:" + port +
                  "/ https://localhost:" + port + "/stream?n=2");
  BOOST_TEST(fetched_status == 0, fetched);
  BOOST_TEST(fetched.find("200       17 bytes") != std::string::npos, fetched);
  BOOST_TEST(fetched.find("200       16 bytes") != std::string::npos, fetched);
  const auto [unverified, unverified_status] =
      run_command(std::string(client) + " --cacert " + certs.file("other-ca.pem") + " https://127.0.0.1:" + port + "/");
  BOOST_TEST(unverified_status == 1, unverified);
  BOOST_TEST(unverified.find("certificate verify failed") != std::string::npos, unverified);
  BOOST_TEST(server.interrupt() == 0);
}

// A client that stalls its handshake (silent, or half a ClientHello) holds its connection slot
// for the request timeout at most; while the slots are full, a new client gets the 503 over TLS;
// afterwards clients are served again. Plain HTTP on the TLS port gets no HTTP answer.
BOOST_AUTO_TEST_CASE(https_a_stalled_handshake_is_cut_off_and_a_full_server_refuses_over_tls) {
  certificates certs;
  server_process server(arguments(certs, {"--request-timeout-ms", "1500", "--max-connections", "2"}));
  auto silent = connect_to(server.endpoint());
  auto half = connect_to(server.endpoint());
  write_all(half, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));

  {
    tls_client refused(server.endpoint(), certs.file("ca.pem"));
    BOOST_REQUIRE(!refused.handshake());
    auto res = refused.response();
    BOOST_TEST(res.result_int() == 503);
    BOOST_TEST(!res.keep_alive());
    BOOST_TEST(res.body() == "too many connections\n");
  }

  for (auto* stalled : {&silent, &half}) {
    const auto closed = wait_for_close(*stalled);
    BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  }
  // (The stalled clients' slots come back as their tasks end, just after their sockets close.)
  std::optional<http::response<http::string_body>> served;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {
    tls_client client(server.endpoint(), certs.file("ca.pem"));
    BOOST_REQUIRE(!client.handshake());
    client.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    auto res = client.response();
    if (res.result_int() == 200) served = std::move(res);
  }
  BOOST_REQUIRE(served.has_value());
  BOOST_TEST(served->body() == "hello from coral\n");

  auto plain = connect_to(server.endpoint());
  write_all(plain, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  std::string answer;
  char sink[512];
  for (;;) {
    const auto [error, n] =
        complete([&](auto done) { plain.async_read_some(asio::buffer(sink), done); }, "the plain client's close");
    answer.append(sink, n);
    if (error) break;
  }
  BOOST_TEST(answer.find("HTTP/") == std::string::npos, answer);
  BOOST_TEST(server.interrupt() == 0);
}

// SIGTERM: a session waiting for its next request ends at once with a close_notify, and a
// handshake not yet begun (a client that connected and said nothing) ends at once too: the
// server exits without waiting for the grace period.
BOOST_AUTO_TEST_CASE(https_graceful_shutdown_closes_tls_cleanly) {
  certificates certs;
  server_process server(arguments(certs));
  tls_client idle(server.endpoint(), certs.file("ca.pem"));
  BOOST_REQUIRE(!idle.handshake());
  idle.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  BOOST_TEST(idle.response().result_int() == 200);
  auto silent = connect_to(server.endpoint());
  {  // (the silent connection has been accepted: a request on another one was answered after it)
    tls_client other(server.endpoint(), certs.file("ca.pem"));
    BOOST_REQUIRE(!other.handshake());
    other.write("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    BOOST_TEST(other.response().result_int() == 200);
  }
  server.signal(SIGTERM);
  const auto closed = idle.wait_for_close();
  BOOST_TEST((closed == asio::error::eof), closed.message());
  const auto silent_closed = wait_for_close(silent);
  BOOST_TEST((silent_closed == asio::error::eof || silent_closed == asio::error::connection_reset),
             silent_closed.message());
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos, server.output());
  BOOST_TEST(server.output().find("grace period over") == std::string::npos, server.output());
}

// Certificate and key files are checked at start: a missing one, or one without the other, is a
// clear error and no server.
BOOST_AUTO_TEST_CASE(https_bad_certificate_options_are_refused_at_start) {
  certificates certs;
  const std::string program = boost::unit_test::framework::master_test_suite().argv[1];
  const auto [missing, missing_status] = run_command(program + " --port 0 --tls-cert " + certs.file("nothing.pem") +
                                                     " --tls-key " + certs.file("server.key"));
  BOOST_TEST(missing_status == 1, missing);
  BOOST_TEST(missing.find("cannot use " + certs.file("nothing.pem")) != std::string::npos, missing);
  const auto [alone, alone_status] = run_command(program + " --port 0 --tls-cert " + certs.file("server.pem"));
  BOOST_TEST(alone_status == 2, alone);
  BOOST_TEST(alone.find("--tls-cert and --tls-key go together") != std::string::npos, alone);
  const auto [swapped, swapped_status] = run_command(program + " --port 0 --tls-cert " + certs.file("server.key") +
                                                     " --tls-key " + certs.file("server.pem"));
  BOOST_TEST(swapped_status == 1, swapped);
  BOOST_TEST(swapped.find("listening") == std::string::npos, swapped);
}

// A client that ends the connection first gets a clean end: after its close_notify, the server's
// own; a request it cuts short with a plain TCP close (no close_notify) is a partial message, 400,
// as over plain TCP.
BOOST_AUTO_TEST_CASE(https_a_client_that_ends_the_connection_first) {
  certificates certs;
  server_process server(arguments(certs));
  {
    tls_client client(server.endpoint(), certs.file("ca.pem"));
    BOOST_REQUIRE(!client.handshake());
    client.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    BOOST_TEST(client.response().result_int() == 200);
    const auto ended = client.shutdown();
    BOOST_TEST(!ended, ended.message());  // the server answered with its close_notify
  }
  {
    tls_client client(server.endpoint(), certs.file("ca.pem"));
    BOOST_REQUIRE(!client.handshake());
    client.write("GET /sta");
    client.socket().shutdown(tcp::socket::shutdown_send);
    const auto res = client.response();
    BOOST_TEST(res.result_int() == 400);
    BOOST_TEST(!res.keep_alive());
    BOOST_TEST(res.body() == "bad request\n");
  }
  BOOST_TEST(server.interrupt() == 0);
}

// The chat over TLS (wss://): two participants whose WebSockets run over the server's TLS
// stream; a line from one reaches both; the page is served over HTTPS too. At the shutdown each
// gets the close frame (1001), and the WebSocket's end closes TLS cleanly.
BOOST_AUTO_TEST_CASE(wss_chat_over_tls_and_a_close_frame_at_shutdown) {
  certificates certs;
  server_process server(arguments(certs));
  const std::string host = "127.0.0.1:" + std::to_string(server.endpoint().port());
  ssl::context tls = client_context(certs.file("ca.pem"));
  using secure_websocket = websocket::stream<beast::ssl_stream<tcp::socket>>;
  std::vector<std::unique_ptr<secure_websocket>> participants;
  for (int i = 0; i < 2; ++i) {
    auto ws = std::make_unique<secure_websocket>(connect_to(server.endpoint()), tls);
    ws->next_layer().set_verify_mode(ssl::verify_peer);
    ws->next_layer().set_verify_callback(ssl::host_name_verification("127.0.0.1"));
    const auto shaken =
        complete([&](auto done) { ws->next_layer().async_handshake(ssl::stream_base::client, done); }, "TLS").first;
    BOOST_REQUIRE_MESSAGE(!shaken, "TLS handshake: " << shaken.message());
    const auto upgraded = complete([&](auto done) { ws->async_handshake(host, "/chat/ws", done); }, "upgrade").first;
    BOOST_REQUIRE_MESSAGE(!upgraded, "WebSocket handshake: " << upgraded.message());
    participants.push_back(std::move(ws));
  }
  const std::string line = "ann: over TLS";
  const auto sent =
      complete([&](auto done) { participants[0]->async_write(asio::buffer(line), done); }, "a send").first;
  BOOST_REQUIRE(!sent);
  for (auto& ws : participants) {
    beast::flat_buffer message;
    const auto [error, n] = complete([&](auto done) { ws->async_read(message, done); }, "a message");
    BOOST_REQUIRE_MESSAGE(!error, "receive: " << error.message());
    BOOST_TEST(beast::buffers_to_string(message.data()) == line);
  }
  server.signal();
  for (auto& ws : participants) {
    beast::flat_buffer message;
    const auto [error, n] = complete([&](auto done) { ws->async_read(message, done); }, "the close frame");
    BOOST_TEST((error == websocket::error::closed), error.message());
    BOOST_TEST(ws->reason().code == websocket::close_code::going_away);
  }
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("grace period over") == std::string::npos, server.output());
}
