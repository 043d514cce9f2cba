// Line-based chat: every line a client sends goes to every client in the room, the sender too.
//   chat_server [--bind 127.0.0.1] [--port 55555] [--threads 1 | --io-pool N] [--grace-ms 5000]
//               [--backlog-bytes 1048576] [--write-timeout-ms 10000] [--line-timeout-ms 10000]
//               [--max-connections 10000]
// Try it: `nc localhost 55555` in two terminals. The connection, the room and their policies are
// in chat_session.hpp.
#include <algorithm>
#include <string_view>
#include <vector>

#include "chat_session.hpp"

using namespace net_demo;
using namespace net_demo::chat_demo;

int main(int argc, char* argv[]) {
  // chat_server's own options are taken out before the common ones are parsed.
  chat_options chat;
  std::vector<char*> common{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (name == "--backlog-bytes" && i + 1 < argc) {
      // (At least what the longest line costs: a smaller cap would drop every client on one line.)
      chat.backlog_limit = std::max<std::size_t>(longest_line_cost, std::strtoull(argv[++i], nullptr, 10));
    } else if (name == "--idle-timeout-ms") {
      // (server.hpp's option, which the other demos use.)
      std::fprintf(stderr, "chat_server: a client that only listens is not idle; there is no --idle-timeout-ms\n");
      return 2;
    } else if (name == "--write-timeout-ms" && i + 1 < argc) {
      chat.write_timeout = std::chrono::milliseconds(std::max(1ul, std::strtoul(argv[++i], nullptr, 10)));
    } else if (name == "--line-timeout-ms" && i + 1 < argc) {
      chat.line_timeout = std::chrono::milliseconds(std::max(1ul, std::strtoul(argv[++i], nullptr, 10)));
    } else {
      common.push_back(argv[i]);
    }
  }
  const options o =
      parse_options(static_cast<int>(common.size()), common.data(),
                    "[--port N] [--threads N | --io-pool N [--reuse-port 1] [--pin-threads 1]] [--grace-ms N] "
                    "[--backlog-bytes N] [--write-timeout-ms N] [--line-timeout-ms N] [--max-connections N]");
  shutdown_signal stopping;
  room r;
  return run(o, stopping, line_refusal,
             [&](tcp::socket socket) { return session(std::move(socket), r, stopping.event(), chat); });
}
