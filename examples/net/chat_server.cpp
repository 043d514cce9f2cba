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
  static constexpr char usage[] =
      "[--port N] [--threads N | --io-pool N [--reuse-port 1] [--pin-threads 1]] [--grace-ms N] "
      "[--backlog-bytes N] [--write-timeout-ms N] [--line-timeout-ms N] [--max-connections N]";
  std::vector<char*> common{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (name == "--idle-timeout-ms") {
      // (server.hpp's option, which the other demos use.)
      std::fprintf(stderr, "chat_server: a client that only listens is not idle; there is no --idle-timeout-ms\n");
      return 2;
    }
    if ((name == "--backlog-bytes" || name == "--write-timeout-ms" || name == "--line-timeout-ms") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long value = std::strtoull(argv[++i], &end, 10);
      if (*argv[i] == '\0' || *end != '\0' || *argv[i] == '-') {
        std::fprintf(stderr, "bad option: %s %s\nusage: %s [--bind ADDRESS] %s\n", argv[i - 1], argv[i], argv[0],
                     usage);
        return 2;
      }
      if (name == "--backlog-bytes") {
        // (At least what the longest line costs: a smaller cap would drop every client on one line.)
        chat.backlog_limit = std::max<std::size_t>(longest_line_cost, value);
      } else if (name == "--write-timeout-ms") {
        chat.write_timeout = std::chrono::milliseconds(std::max(1ull, value));
      } else {
        chat.line_timeout = std::chrono::milliseconds(std::max(1ull, value));
      }
    } else {
      common.push_back(argv[i]);
    }
  }
  const options o = parse_options(static_cast<int>(common.size()), common.data(), usage);
  shutdown_signal stopping;
  room r;
  return run(o, stopping, refuse_with(line_refusal),
             [&](tcp::socket socket) { return session(std::move(socket), r, stopping.event(), chat); });
}
