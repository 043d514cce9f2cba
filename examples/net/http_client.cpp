// Fetches several URLs concurrently (when_all), each under a deadline (with_timeout), with Beast's
// client side; prints status, size and time per URL.
//   http_client [--timeout-ms 5000] [--cacert FILE] [url...]
// Without URLs it asks a local http_server (port 55555, or --port N) for a few of its pages, so
// it works offline. https:// URLs are fetched over TLS, the server's certificate checked against
// the system's certificate authorities, or against the ones in --cacert (a PEM file), and its name
// against the URL's host.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url.hpp>
#include <boost/url/src.hpp>  // (Boost.URL compiled in)
#include <coral/coral.hpp>
#include <cstdio>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace urls = boost::urls;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

struct outcome {
  std::string url;
  int status = 0;  // 0: failed
  std::size_t size = 0;
  std::string error;
  std::chrono::steady_clock::duration took{};
};

using response = http::response<http::string_body>;

// One GET of `url` over `stream` (a socket, or TLS over one).
template <class Stream>
coral::task<response> exchange(Stream& stream, const urls::url_view& url) {
  http::request<http::empty_body> req{http::verb::get, url.encoded_target().empty() ? "/" : url.encoded_target(), 11};
  req.set(http::field::host, url.encoded_host_and_port());
  req.set(http::field::user_agent, "coral http_client");
  req.keep_alive(false);
  co_await http::async_write(stream, req, coral::use_task);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  co_await http::async_read(stream, buffer, parser, coral::use_task);
  co_return parser.release();
}

coral::task<response> get(const urls::url_view& url, asio::ssl::context& tls) {
  auto executor = co_await coral::this_task::executor;
  const bool https = url.scheme_id() == urls::scheme::https;
  const std::string host = url.host_address();  // (an IPv6 address without its brackets)
  tcp::resolver resolver(executor);
  const auto port = url.has_port() ? std::string(url.port()) : std::string(https ? "443" : "80");
  auto endpoints = co_await resolver.async_resolve(host, port, coral::use_task);
  tcp::socket socket(executor);
  co_await asio::async_connect(socket, endpoints, coral::use_task);
  if (!https) co_return co_await exchange(socket, url);

  beast::ssl_stream<tcp::socket> stream(std::move(socket), tls);
  // The name the server is asked for (SNI: names only, never an address), and checked against.
  if (url.host_type() == urls::host_type::name && !SSL_set_tlsext_host_name(stream.native_handle(), host.c_str())) {
    throw boost::system::system_error(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category(), "SNI");
  }
  stream.set_verify_mode(asio::ssl::verify_peer);
  stream.set_verify_callback(asio::ssl::host_name_verification(host));
  co_await stream.async_handshake(asio::ssl::stream_base::client, coral::use_task);
  auto res = co_await exchange(stream, url);
  // The response is complete: a server that closes without its close_notify loses nothing here.
  try {
    co_await stream.async_shutdown(coral::use_task);
  } catch (const boost::system::system_error&) {
  }
  co_return res;
}

// Never throws: one URL's failure is its own line of the report, not the others' cancellation.
coral::task<outcome> fetch(std::string url, std::chrono::milliseconds timeout, asio::ssl::context& tls) {
  outcome o;
  o.url = url;
  const auto start = std::chrono::steady_clock::now();
  try {
    auto parsed = urls::parse_uri(url);
    if (!parsed || (parsed->scheme_id() != urls::scheme::http && parsed->scheme_id() != urls::scheme::https))
      throw std::invalid_argument("not an http:// or https:// URL");
    auto res = co_await coral::with_timeout(timeout, get(*parsed, tls));
    o.status = res.result_int();
    o.size = res.body().size();
  } catch (const boost::system::system_error& e) {
    o.error = e.code().message();  // (what() adds the source location)
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  o.took = std::chrono::steady_clock::now() - start;
  co_return o;
}

int main(int argc, char* argv[]) {
  std::chrono::milliseconds timeout = 5s;
  std::string port = "55555";
  std::string cacert;
  std::vector<std::string> targets;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--timeout-ms" && i + 1 < argc) {
      timeout = std::chrono::milliseconds(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--port" && i + 1 < argc) {
      port = argv[++i];
    } else if (a == "--cacert" && i + 1 < argc) {
      cacert = argv[++i];
    } else {
      targets.emplace_back(a);
    }
  }
  if (targets.empty()) {
    for (const char* page : {"/", "/sleep?ms=300", "/stream?n=3", "/stats", "/nowhere"}) {
      targets.push_back("http://127.0.0.1:" + port + page);
    }
  }

  asio::ssl::context tls(asio::ssl::context::tls_client);
  boost::system::error_code error;
  if (cacert.empty()) {
    tls.set_default_verify_paths(error);
  } else {
    tls.load_verify_file(cacert, error);
  }
  if (error) {
    std::fprintf(stderr, "error: certificate authorities %s: %s\n", cacert.empty() ? "of the system" : cacert.c_str(),
                 error.message().c_str());
    return 2;
  }

  asio::io_context io(1);
  std::vector<coral::task<outcome>> fetches;
  for (const auto& t : targets) fetches.push_back(fetch(t, timeout, tls));
  auto all = coral::spawn(io.get_executor(), [&]() -> coral::task<std::vector<outcome>> {
    co_return co_await coral::when_all(std::move(fetches));
  });
  const auto start = std::chrono::steady_clock::now();
  io.run();
  const auto results = all.get_result();
  int failed = 0;
  for (const auto& r : results) {
    const double ms = std::chrono::duration<double, std::milli>(r.took).count();
    if (r.status) {
      std::printf("%3d %8zu bytes %8.1f ms  %s\n", r.status, r.size, ms, r.url.c_str());
    } else {
      ++failed;
      std::printf("ERR %8s       %8.1f ms  %s: %s\n", "", ms, r.url.c_str(), r.error.c_str());
    }
  }
  std::printf("%zu URLs in %.1f ms (concurrently)\n", results.size(),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return failed ? 1 : 0;
}
