// HTTP/1.1 server: the connection's code and its policies are in http_session.hpp.
//   http_server [--port 55555] [--threads 1 | --io-pool N] [--idle-timeout-ms 30000] [--grace-ms 5000]
//               [--request-timeout-ms 10000] [--write-timeout-ms 10000] [--stream-interval-ms 100]
//               [--max-connections 10000]
// Try it: curl localhost:55555/  /sleep?ms=500  /stream?n=5  /stats  -d hi localhost:55555/echo
#include <algorithm>
#include <string_view>
#include <vector>

#include "http_session.hpp"

// Boost.JSON and Boost.URL compiled in (one translation unit uses them). After Beast: Boost.URL
// 1.81 under a newer Boost.Core (docs/platforms.md, the overlay) needs what Beast includes first.
#include <boost/json/src.hpp>
#include <boost/url/src.hpp>

using namespace net_demo;
using namespace net_demo::http_demo;

int main(int argc, char* argv[]) {
  server_context server;
  std::vector<char*> common{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (name == "--request-timeout-ms" && i + 1 < argc) {
      server.request_timeout = std::chrono::milliseconds(std::strtoul(argv[++i], nullptr, 10));
    } else if (name == "--write-timeout-ms" && i + 1 < argc) {
      server.write_timeout = std::chrono::milliseconds(std::max(1ul, std::strtoul(argv[++i], nullptr, 10)));
    } else if (name == "--stream-interval-ms" && i + 1 < argc) {
      server.stream_interval = std::chrono::milliseconds(std::strtoul(argv[++i], nullptr, 10));
    } else {
      common.push_back(argv[i]);
    }
  }
  server.o = parse_options(
      static_cast<int>(common.size()), common.data(),
      "[--port N] [--threads N | --io-pool N [--reuse-port 1] [--pin-threads 1]] [--idle-timeout-ms N] [--grace-ms "
      "N] [--request-timeout-ms N] [--write-timeout-ms N] [--stream-interval-ms N] [--max-connections N]");
  const std::string refusal = over_capacity();
  return run(server.o, server.stopping, refusal,
             [&](tcp::socket socket) { return session(std::move(socket), server); });
}
