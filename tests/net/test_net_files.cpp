// The HTTP demo's static files (http_server --root DIR: GET and HEAD /files/<path>), driven as a
// user would drive them: a directory made for the run, and requests as curl or a browser sends them.
//   test_net_files --run_test=<scenario> -- <http_server> [--threads N | --io-pool N]
//                  [--file-reads io_uring|pool]
#define BOOST_TEST_MODULE coral static files demo
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <boost/json/src.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

#include "../server_process.hpp"
#include "http_exchange.hpp"

using namespace server_test;
namespace json = boost::json;

namespace {

// The served directory, made for the run, with a secret beside it (outside the root) that links
// inside try to reach. Removed at the end.
struct site {
  std::filesystem::path dir;
  std::filesystem::path root;
  std::string big;  // big.bin's bytes
  site() {
    char name[] = "/tmp/coral-files-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
    root = dir / "root";
    std::filesystem::create_directories(root / "sub");
    std::ofstream(root / "index.html") << "<h1>hello</h1>\n";
    std::ofstream(root / "sub" / "notes.txt") << "notes\n";
    std::ofstream(root / "data.JSON") << "{}";
    std::ofstream(root / "no-extension") << "x";
    big = pattern(1024 * 1024 + 17, 3);
    std::ofstream(root / "big.bin", std::ios::binary) << big;
    std::ofstream(dir / "secret.txt") << "the secret beside the root\n";
    std::filesystem::create_symlink("../secret.txt", root / "up");
    std::filesystem::create_symlink("/etc/passwd", root / "passwd");
    std::filesystem::create_symlink("sub/notes.txt", root / "inside");  // a link that stays inside
    BOOST_REQUIRE(::mkfifo((root / "fifo").c_str(), 0600) == 0);
  }
  ~site() { std::filesystem::remove_all(dir); }
};

// The server's arguments: a free port, the root, and what was given after the program.
std::vector<std::string> arguments(const site& s, std::vector<std::string> more = {}) {
  return server_arguments(std::move(more), {"--root", s.root.string()});
}

// How the server under test reads files: "pool" when asked for, else whichever works here.
bool pool_asked() {
  auto& suite = boost::unit_test::framework::master_test_suite();
  for (int i = 2; i + 1 < suite.argc; ++i) {
    if (std::string(suite.argv[i]) == "--file-reads" && std::string(suite.argv[i + 1]) == "pool") return true;
  }
  return false;
}

}  // namespace

// Whole files, HEAD, Content-Type, keep-alive after a file, ETag and If-None-Match, Range (one
// range: 206; past the end: 416; several, malformed, or under an If-Range that does not match:
// the whole file), and /stats saying how files are read.
BOOST_AUTO_TEST_CASE(files_whole_partial_conditional_and_head) {
  site s;
  server_process server(arguments(s));
  const auto ep = server.endpoint();
  {
    const auto stats = json::parse(raw_request(ep, get(ep, "/stats")).body()).as_object();
    const std::string reads(stats.at("file_reads").as_string());
    if (pool_asked()) {
      BOOST_TEST(reads == "pool");
    } else {
      BOOST_TEST((reads == "io_uring" || reads == "pool"), reads);
    }
    BOOST_TEST_MESSAGE("files read through " << reads);
  }
  // One connection, kept alive across files.
  tcp::socket socket = connect_to(ep);
  beast::flat_buffer buffer;
  auto ask = [&](const std::string& target, const std::string& fields = "", const char* method = "GET") {
    write_all(socket, get(ep, target, fields, method));
    return read_response(socket, buffer, std::string_view(method) == "HEAD");
  };
  auto page = ask("/files/index.html");
  BOOST_TEST(page.result_int() == 200);
  BOOST_TEST(page.body() == "<h1>hello</h1>\n");
  BOOST_TEST(page[http::field::content_type] == "text/html; charset=utf-8");
  BOOST_TEST(page[http::field::content_length] == "15");
  BOOST_TEST(page[http::field::accept_ranges] == "bytes");
  BOOST_TEST(page[http::field::server] == "coral");
  const std::string etag(page[http::field::etag]);
  BOOST_TEST((etag.size() > 2 && etag.front() == '"' && etag.back() == '"'), etag);
  BOOST_TEST(page.keep_alive());

  const auto big = ask("/files/big.bin");
  BOOST_TEST(big.result_int() == 200);
  BOOST_TEST(big[http::field::content_type] == "application/octet-stream");
  BOOST_TEST(big.body().size() == s.big.size());
  BOOST_TEST((big.body() == s.big));
  BOOST_TEST(ask("/files/data.JSON")[http::field::content_type] == "application/json");
  BOOST_TEST(ask("/files/no-extension")[http::field::content_type] == "application/octet-stream");
  BOOST_TEST(ask("/files/sub/notes.txt").body() == "notes\n");
  BOOST_TEST(ask("/files/inside").body() == "notes\n");  // (a link that stays under the root)

  const auto head = ask("/files/big.bin", "", "HEAD");
  BOOST_TEST(head.result_int() == 200);
  BOOST_TEST(head[http::field::content_length] == std::to_string(s.big.size()));
  BOOST_TEST(head.body().empty());

  // Conditional requests.
  for (const std::string& tags : {etag, "W/" + etag, "\"other\", " + etag, std::string("*")}) {
    const auto unchanged = ask("/files/index.html", "If-None-Match: " + tags + "\r\n");
    BOOST_TEST(unchanged.result_int() == 304, tags);
    BOOST_TEST(unchanged.body().empty());
    BOOST_TEST(unchanged[http::field::etag] == etag);
  }
  BOOST_TEST(ask("/files/index.html", "If-None-Match: \"other\"\r\n").result_int() == 200);
  BOOST_TEST(ask("/files/index.html", "If-None-Match: \"other\"\r\nIf-None-Match: " + etag + "\r\n").result_int() ==
             304);  // (two lines are one list)

  // Ranges.
  const auto size = s.big.size();
  auto check_partial = [&](const std::string& range, std::size_t first, std::size_t length) {
    const auto part = ask("/files/big.bin", "Range: " + range + "\r\n");
    BOOST_TEST(part.result_int() == 206, range);
    BOOST_TEST(part[http::field::content_range] == "bytes " + std::to_string(first) + "-" +
                                                       std::to_string(first + length - 1) + "/" + std::to_string(size),
               range);
    BOOST_TEST((part.body() == s.big.substr(first, length)), range);
  };
  check_partial("bytes=10-19", 10, 10);
  check_partial("bytes=0-0", 0, 1);
  check_partial("bytes=-100", size - 100, 100);
  check_partial("bytes=1000000-", 1000000, size - 1000000);
  check_partial("bytes=5-99999999", 5, size - 5);
  check_partial("bytes=-99999999", 0, size);
  check_partial("BYTES=10-19", 10, 10);
  check_partial("bytes=0-18446744073709551616", 0, size);  // (past 64 bits: the end)
  check_partial("bytes=-99999999999999999999", 0, size);
  check_partial("bytes=00000000000000000001-2", 1, 2);
  for (const std::string& past :
       {"bytes=" + std::to_string(size) + "-", std::string("bytes=-0"), std::string("bytes=18446744073709551615-")}) {
    const auto refused = ask("/files/big.bin", "Range: " + past + "\r\n");
    BOOST_TEST(refused.result_int() == 416, past);
    BOOST_TEST(refused[http::field::content_range] == "bytes */" + std::to_string(size));
    BOOST_TEST(refused.body().empty());
  }
  std::string thousand = "bytes=0-0";  // (a thousand parts, overlapping, within the 8 KiB header limit)
  for (int i = 1; i < 1000; ++i) thousand += ",0-0";
  for (const std::string& whole : {thousand, std::string("bytes=abc"), std::string("bytes=20-10"),
                                   std::string("lines=1-2"), std::string("bytes=1-2,4-5")}) {
    const auto all = ask("/files/big.bin", "Range: " + whole + "\r\n");
    BOOST_TEST(all.result_int() == 200, whole.substr(0, 40));
    BOOST_TEST((all.body() == s.big));
  }
  BOOST_TEST(ask("/files/big.bin", "Range: bytes=0-9\r\nIf-Range: \"stale\"\r\n").result_int() == 200);
  BOOST_TEST(ask("/files/big.bin", "Range: bytes=0-9\r\nIf-Range: " + etag + "\r\n").result_int() ==
             200);  // (index.html's)
  BOOST_TEST(ask("/files/big.bin", "Range: bytes=0-9\r\nIf-Range: " + std::string(big[http::field::etag]) + "\r\n")
                 .result_int() == 206);
  BOOST_TEST(ask("/files/index.html", "Range: bytes=0-9\r\nIf-Range: " + etag + "\r\n").result_int() == 206);

  BOOST_TEST(server.interrupt() == 0);
}

// What is not served (404): a path that leaves the root, however it is written or linked, and
// anything that is not a regular file (a directory, a FIFO, which must not hang the server). A
// method other than GET and HEAD is 405.
BOOST_AUTO_TEST_CASE(files_outside_the_root_or_not_regular_are_404) {
  site s;
  server_process server(arguments(s));
  const auto ep = server.endpoint();
  for (const std::string& target :
       {"/files/../secret.txt", "/files/%2e%2e/secret.txt", "/files/%2E%2E/secret.txt", "/files/sub/../../secret.txt",
        "/files/sub/%2e%2e/%2e%2e/secret.txt", "/files/.%2e/secret.txt", "/files/up", "/files/passwd",
        "/files/sub%2F..%2F..%2Fsecret.txt", "/files/%2Fetc%2Fpasswd", "/files//etc/passwd", "/files/./index.html",
        "/files/index.html%00", "/files/sub", "/files/fifo", "/files/nothing-here", "/files/", "/files",
        "/files/sub/"}) {
    const auto res = raw_request(ep, get(ep, target));
    BOOST_TEST(res.result_int() == 404, target);
    BOOST_TEST(res.body().find("the secret beside") == std::string::npos, target);
  }
  const auto post = raw_request(ep, "POST /files/index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  BOOST_TEST(post.result_int() == 405);
  BOOST_TEST(post[http::field::allow] == "GET, HEAD");
  // The server still serves.
  BOOST_TEST(raw_request(ep, get(ep, "/files/index.html")).body() == "<h1>hello</h1>\n");
  BOOST_TEST(server.interrupt() == 0);
}

// A large file in pieces: a client that takes nothing of it is dropped after the write timeout;
// one whose download is in flight when the shutdown begins gets all of it, and the server exits 0.
BOOST_AUTO_TEST_CASE(files_a_large_file_to_a_client_that_stops_reading_and_at_shutdown) {
  site s;
  const std::string large = pattern(16 * 1024 * 1024, 5);
  std::ofstream(s.root / "large.bin", std::ios::binary) << large;
  server_process server(arguments(s, {"--write-timeout-ms", "500"}));
  const auto ep = server.endpoint();

  tcp::socket stalled = connect_to(ep, 4096);
  write_all(stalled, get(ep, "/files/large.bin"));
  // The server's reset arrives without the client reading a byte (reading would be progress).
  complete([&](auto done) { stalled.async_wait(tcp::socket::wait_error, done); }, "the server's reset");
  const auto dropped = wait_for_close(stalled);
  BOOST_TEST((dropped == asio::error::connection_reset), dropped.message());

  tcp::socket downloading = connect_to(ep);
  write_all(downloading, get(ep, "/files/large.bin"));
  const std::string first = read_exactly(downloading, 4096);  // the header and the first bytes
  server.signal();
  beast::flat_buffer buffer;
  buffer.commit(asio::buffer_copy(buffer.prepare(first.size()), asio::buffer(first)));
  const auto res = read_response(downloading, buffer);
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body().size() == large.size());
  BOOST_TEST((res.body() == large));
  BOOST_TEST((wait_for_close(downloading) == asio::error::eof));  // (no next request: the shutdown began)
  BOOST_TEST(server.exit_status() == 0);
}

// Downloads cut by the shutdown's second phase: sixteen clients read a 256 MiB file as fast as they
// can, and sixteen have stopped reading it, when the grace period (300 ms) runs out, so that reads
// and writes are in flight when the sessions are cancelled. The server exits 0: no read's
// completion is lost.
BOOST_AUTO_TEST_CASE(files_downloads_cancelled_by_the_grace_period) {
  site s;
  { std::ofstream sparse(s.root / "sparse.bin", std::ios::binary); }
  std::filesystem::resize_file(s.root / "sparse.bin", 256 * 1024 * 1024);
  server_process server(arguments(s, {"--grace-ms", "300"}));
  const auto ep = server.endpoint();
  struct download {
    tcp::socket socket;
    std::array<char, 65536> sink{};
    std::size_t received = 0;
    bool ended = false;
  };
  std::vector<std::unique_ptr<download>> downloads;
  std::function<void(download&)> read_on = [&](download& d) {
    d.socket.async_read_some(asio::buffer(d.sink), [&](boost::system::error_code e, std::size_t n) {
      d.received += n;
      if (e) {
        d.ended = true;
      } else {
        read_on(d);
      }
    });
  };
  for (int i = 0; i < 16; ++i) {
    downloads.push_back(std::make_unique<download>(download{connect_to(ep)}));
    write_all(downloads.back()->socket, get(ep, "/files/sparse.bin"));
    read_on(*downloads.back());
  }
  // And sixteen that stop reading at once (their sessions wait in writes).
  std::vector<tcp::socket> stalled;
  for (int i = 0; i < 16; ++i) {
    stalled.push_back(connect_to(ep, 4096));
    write_all(stalled.back(), get(ep, "/files/sparse.bin"));
  }
  // Every download under way, then the signal.
  bool all_started = false;
  const auto deadline = clock_type::now() + patience;
  io.restart();
  while (!all_started && clock_type::now() < deadline) {
    io.run_one_until(deadline);
    all_started = std::all_of(downloads.begin(), downloads.end(), [](const auto& d) { return d->received > 0; });
  }
  BOOST_REQUIRE(all_started);
  server.signal();
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("grace period over") != std::string::npos, server.output());
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos, server.output());
  // The downloads end with the server (cut short).
  const auto ends_by = clock_type::now() + patience;
  io.restart();
  auto all_ended = [&] {
    return std::all_of(downloads.begin(), downloads.end(), [](const auto& d) { return d->ended; });
  };
  while (!all_ended() && clock_type::now() < ends_by) io.run_one_until(ends_by);
  BOOST_TEST(all_ended());
}
