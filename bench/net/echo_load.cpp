// Load for the echo benchmark. Two modes:
//   echo_load --port P --connections 64 --size 64 --seconds 10    round trips per second
//   echo_load --port P --idle 10000 --pid PID                      RSS growth per idle connection
// Each connection sends a message, waits for its echo, and sends the next (one in flight per
// connection). One thread, callbacks: the load costs the same whichever server it drives.
#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;

struct connection {
  tcp::socket socket;
  std::vector<char> out, in;
  long* round_trips;
  connection(asio::io_context& io, std::size_t size, long* count)
      : socket(io), out(size, 'x'), in(size), round_trips(count) {}

  void send() {
    asio::async_write(socket, asio::buffer(out), [this](boost::system::error_code e, std::size_t) {
      if (e) return;
      asio::async_read(socket, asio::buffer(in), [this](boost::system::error_code e, std::size_t) {
        if (e) return;
        ++*round_trips;
        send();
      });
    });
  }
};

long rss_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

int main(int argc, char* argv[]) {
  unsigned short port = 55555;
  int connections = 64, seconds = 10, idle = 0, pid = 0;
  std::size_t size = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    const long v = std::atol(argv[i + 1]);
    if (name == "--port") port = static_cast<unsigned short>(v);
    if (name == "--connections") connections = static_cast<int>(v);
    if (name == "--seconds") seconds = static_cast<int>(v);
    if (name == "--size") size = static_cast<std::size_t>(v);
    if (name == "--idle") idle = static_cast<int>(v);
    if (name == "--pid") pid = static_cast<int>(v);
  }
  asio::io_context io(1);
  const tcp::endpoint server(asio::ip::address_v4::loopback(), port);
  long round_trips = 0;
  std::vector<std::unique_ptr<connection>> all;
  const int n = idle ? idle : connections;
  const long before = idle ? rss_kib(pid) : 0;
  for (int i = 0; i < n; ++i) {
    all.push_back(std::make_unique<connection>(io, idle ? 1 : size, &round_trips));
    all.back()->socket.connect(server);
  }
  if (idle) {
    // One round trip each: every session has started and waits for its client again.
    for (auto& c : all) {
      asio::write(c->socket, asio::buffer(c->out));
      asio::read(c->socket, asio::buffer(c->in));
    }
    const long after = rss_kib(pid);
    std::printf("rss_per_idle_connection_bytes=%.1f (%d connections, %ld KiB -> %ld KiB)\n",
                (after - before) * 1024.0 / idle, idle, before, after);
    return 0;
  }
  for (auto& c : all) c->send();
  io.run_for(std::chrono::seconds(1));  // warm-up
  const long warm = round_trips;
  const auto start = std::chrono::steady_clock::now();
  io.run_for(std::chrono::seconds(seconds));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("round_trips_per_second=%.0f\n", (round_trips - warm) / took);
}
