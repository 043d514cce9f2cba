// Fetches several URLs concurrently (when_all), each under a deadline (with_timeout), with Beast's
// client side; prints status, size and time per URL.
//   http_client [--timeout-ms 5000] [url...]
// Without URLs it asks a local http_server (port 55555, or --port N) for a few of its pages, so
// it works offline.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
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

coral::task<http::response<http::string_body>> get(const urls::url_view& url) {
  auto executor = co_await coral::this_task::executor;
  tcp::resolver resolver(executor);
  const auto port = url.has_port() ? std::string(url.port()) : std::string("80");
  auto endpoints = co_await resolver.async_resolve(std::string(url.host()), port, coral::use_task);
  tcp::socket socket(executor);
  co_await asio::async_connect(socket, endpoints, coral::use_task);

  http::request<http::empty_body> req{http::verb::get, url.encoded_target().empty() ? "/" : url.encoded_target(), 11};
  req.set(http::field::host, url.encoded_host_and_port());
  req.set(http::field::user_agent, "coral http_client");
  req.keep_alive(false);
  co_await http::async_write(socket, req, coral::use_task);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  co_await http::async_read(socket, buffer, parser, coral::use_task);
  co_return parser.release();
}

// Never throws: one URL's failure is its own line of the report, not the others' cancellation.
coral::task<outcome> fetch(std::string url, std::chrono::milliseconds timeout) {
  outcome o;
  o.url = url;
  const auto start = std::chrono::steady_clock::now();
  try {
    auto parsed = urls::parse_uri(url);
    if (!parsed || parsed->scheme() != "http") throw std::invalid_argument("not an http:// URL");
    auto res = co_await coral::with_timeout(timeout, get(*parsed));
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
  std::vector<std::string> targets;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--timeout-ms" && i + 1 < argc) {
      timeout = std::chrono::milliseconds(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--port" && i + 1 < argc) {
      port = argv[++i];
    } else {
      targets.emplace_back(a);
    }
  }
  if (targets.empty()) {
    for (const char* page : {"/", "/sleep?ms=300", "/stream?n=3", "/stats", "/nowhere"}) {
      targets.push_back("http://127.0.0.1:" + port + page);
    }
  }

  asio::io_context io(1);
  std::vector<coral::task<outcome>> fetches;
  for (const auto& t : targets) fetches.push_back(fetch(t, timeout));
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
