// HTTP/1.1 server: the connection's code and its policies are in http_session.hpp.
//   http_server [--bind 127.0.0.1] [--port 55555] [--threads 1 | --io-pool N] [--idle-timeout-ms 30000]
//               [--grace-ms 5000] [--request-timeout-ms 10000] [--write-timeout-ms 10000]
//               [--stream-interval-ms 100] [--max-connections 10000] [--debug-port N]
//               [--tls-cert FILE --tls-key FILE] [--root DIR [--file-reads io_uring|pool]]
// Try it: curl localhost:55555/  /sleep?ms=500  /stream?n=5  /stats  -d hi localhost:55555/echo
// The chat room in a browser: http://localhost:55555/chat (open it twice).
// With --root DIR, the files under DIR: curl localhost:55555/files/index.html (static_files.hpp);
// read through io_uring where Asio and the kernel have it, else on a thread pool (--file-reads
// chooses; /stats says which).
// With --debug-port 6060, what the tasks do (CORAL_TASK_TRACKING=1): curl localhost:6060/debug/tasks
// With --tls-cert (a PEM certificate chain, the server's first) and --tls-key (its PEM private
// key), HTTPS on the port (tls.hpp): curl --cacert ca.pem https://localhost:55555/. The debug
// port stays plain HTTP, on 127.0.0.1.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http_session.hpp"
#include "tls.hpp"

// Boost.JSON and Boost.URL compiled in (one translation unit uses them). After Beast: Boost.URL
// 1.81 under a newer Boost.Core (docs/platforms.md, the overlay) needs what Beast includes first.
#include <boost/json/src.hpp>
#include <boost/url/src.hpp>

using namespace net_demo;
using namespace net_demo::http_demo;

int main(int argc, char* argv[]) {
  static constexpr char usage[] =
      "[--port N] [--threads N | --io-pool N [--reuse-port 1] [--pin-threads 1]] [--idle-timeout-ms N] [--grace-ms "
      "N] [--request-timeout-ms N] [--write-timeout-ms N] [--stream-interval-ms N] [--max-connections N] "
      "[--debug-port N] [--tls-cert FILE --tls-key FILE] [--root DIR [--file-reads io_uring|pool]]";
  // http_server's own options are taken out before the common ones are parsed.
  server_context server;
  std::optional<unsigned short> debug_port;  // the debug routes' listener, on 127.0.0.1 (none unless asked)
  std::optional<std::string> tls_cert, tls_key;
  std::optional<std::string> root, file_reads;
  std::vector<char*> common{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if ((name == "--tls-cert" || name == "--tls-key") && i + 1 < argc) {
      (name == "--tls-cert" ? tls_cert : tls_key) = argv[++i];
    } else if ((name == "--root" || name == "--file-reads") && i + 1 < argc) {
      (name == "--root" ? root : file_reads) = argv[++i];
    } else if ((name == "--request-timeout-ms" || name == "--write-timeout-ms" || name == "--stream-interval-ms" ||
                name == "--debug-port") &&
               i + 1 < argc) {
      char* end = nullptr;
      const unsigned long value = std::strtoul(argv[++i], &end, 10);
      if (*argv[i] == '\0' || *end != '\0' || (name == "--debug-port" && value > 65535)) {
        std::fprintf(stderr, "bad option: %s %s\nusage: %s [--bind ADDRESS] %s\n", argv[i - 1], argv[i], argv[0],
                     usage);
        return 2;
      }
      if (name == "--debug-port") {
        debug_port = static_cast<unsigned short>(value);
      } else if (name == "--request-timeout-ms") {
        server.request_timeout = std::chrono::milliseconds(value);
      } else if (name == "--write-timeout-ms") {
        server.write_timeout = std::chrono::milliseconds(std::max(1ul, value));
      } else {
        server.stream_interval = std::chrono::milliseconds(value);
      }
    } else {
      common.push_back(argv[i]);
    }
  }
  server.o = parse_options(static_cast<int>(common.size()), common.data(), usage);
  if (tls_cert.has_value() != tls_key.has_value()) {
    std::fprintf(stderr, "--tls-cert and --tls-key go together\nusage: %s [--bind ADDRESS] %s\n", argv[0], usage);
    return 2;
  }
  if (file_reads && (!root || (*file_reads != "io_uring" && *file_reads != "pool"))) {
    std::fprintf(stderr, "--file-reads io_uring|pool goes with --root\nusage: %s [--bind ADDRESS] %s\n", argv[0],
                 usage);
    return 2;
  }
  if (root) {
    const bool uring = static_files::io_uring_files_work();
    if (file_reads == "io_uring" && !uring) {
      std::fprintf(stderr, "error: --file-reads io_uring: Asio's io_uring files do not work here (%s)\n",
#if defined(BOOST_ASIO_HAS_FILE)
                   "the kernel refused a ring"
#else
                   "coral was built without liburing"
#endif
      );
      return 1;
    }
    const auto reads =
        uring && file_reads != "pool" ? static_files::file_reads::io_uring : static_files::file_reads::pool;
    try {
      server.files = std::make_unique<static_files::file_root>(*root, reads);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  std::optional<asio::ssl::context> tls;
  if (tls_cert) {
    try {
      tls.emplace(server_tls_context(*tls_cert, *tls_key));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  const std::string refusal = over_capacity();
  auto refuse = [&](tcp::socket socket) {
    return tls ? refuse_tls_connection(std::move(socket), *tls, refusal)
               : refuse_connection(std::move(socket), refusal);
  };
  auto demo = [&](tcp::socket socket) {
    return tls ? tls_session(std::move(socket), *tls, server) : session(std::move(socket), server, routes::demo);
  };
  if (!debug_port) return run(server.o, server.stopping, refuse, demo);
  auto debug = [&](tcp::socket socket) { return session(std::move(socket), server, routes::debug); };
  return run(server.o, server.stopping, refuse, demo,
             private_listener<decltype(debug)>{"debug routes", *debug_port, debug});
}
