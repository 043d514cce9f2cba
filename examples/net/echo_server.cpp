// TCP echo server: one coral task per connection (echo_session.hpp).
//   echo_server [--bind 127.0.0.1] [--port 55555] [--threads 1 | --io-pool N] [--idle-timeout-ms 30000]
//               [--grace-ms 5000] [--max-connections 10000]
// Try it: `nc localhost 55555`. A connection idle for the timeout is closed; SIGINT / SIGTERM shut
// the server down gracefully (server.hpp).
#include "echo_session.hpp"

using namespace net_demo;
using namespace net_demo::echo_demo;

int main(int argc, char* argv[]) {
  const options o = parse_options(
      argc, argv,
      "[--port N] [--threads N | --io-pool N [--reuse-port 1] [--pin-threads 1]] [--idle-timeout-ms N] [--grace-ms N] "
      "[--max-connections N]");
  shutdown_signal stopping;
  return run(o, stopping, refuse_with(line_refusal),
             [&](tcp::socket socket) { return echo(std::move(socket), o, stopping); });
}
