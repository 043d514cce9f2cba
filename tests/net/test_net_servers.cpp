// Smoke and robustness tests of the network demos (examples/net), driven as a user would drive
// them: started on a free port, hit by clients, stopped with a signal, exit status checked.
//   test_net_servers --run_test=<scenario> -- <server program> [--threads N]
#define BOOST_TEST_MODULE coral network demos
#include "../server_process.hpp"

using namespace server_test;

namespace {

// The server's arguments: a free port, the threads given after the program, and `more`.
std::vector<std::string> arguments(std::vector<std::string> more = {}) {
  std::vector<std::string> all{"--port", "0"};
  auto& suite = boost::unit_test::framework::master_test_suite();
  for (int i = 2; i < suite.argc; ++i) all.emplace_back(suite.argv[i]);
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

}  // namespace

BOOST_AUTO_TEST_CASE(echo_bytes) {
  server_process server(arguments());
  std::vector<tcp::socket> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(connect_to(server.endpoint()));
  std::vector<std::string> sent, got;
  int pending = 0;
  bool done = false;
  auto one_done = [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    done = --pending == 0;
  };
  for (unsigned i = 0; i < clients.size(); ++i) sent.push_back(pattern(50'000 + 1000 * i, i));
  got.resize(sent.size());
  for (unsigned i = 0; i < clients.size(); ++i) {
    got[i].resize(sent[i].size());
    pending += 2;
    asio::async_write(clients[i], asio::buffer(sent[i]), one_done);
    asio::async_read(clients[i], asio::buffer(got[i]), one_done);
  }
  run_until(done, "every echo");
  for (unsigned i = 0; i < clients.size(); ++i) BOOST_TEST((got[i] == sent[i]));
  BOOST_TEST(server.interrupt() == 0);
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(echo_idle_timeout) {
  constexpr auto idle = 500ms;
  server_process server(arguments({"--idle-timeout-ms", std::to_string(idle.count())}));
  auto client = connect_to(server.endpoint());
  write_all(client, "ping\n");
  BOOST_TEST(read_exactly(client, 5) == "ping\n");
  const auto last = clock_type::now();
  const auto closed = wait_for_close(client);
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  const auto quiet = clock_type::now() - last;
  BOOST_TEST((quiet >= idle - 50ms));  // a lower bound: not before its time
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(echo_graceful_shutdown_ends_idle_sessions_at_once) {
  server_process server(arguments());
  auto first = connect_to(server.endpoint());
  auto second = connect_to(server.endpoint());
  write_all(first, "x");
  BOOST_TEST(read_exactly(first, 1) == "x");
  write_all(second, "y");
  BOOST_TEST(read_exactly(second, 1) == "y");
  // Both sessions wait for their clients: SIGTERM ends them at once (the grace period is 5 s),
  // each closing its connection cleanly.
  const auto start = clock_type::now();
  server.signal(SIGTERM);
  BOOST_TEST((wait_for_close(first) == asio::error::eof));
  BOOST_TEST((wait_for_close(second) == asio::error::eof));
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos, server.output());
  BOOST_TEST(server.output().find("grace period over") == std::string::npos, server.output());
  BOOST_TEST_MESSAGE("shutdown took " << std::chrono::duration<double>(clock_type::now() - start).count() << " s");
}

namespace {

// Reads lines until `expected` (other clients' lines may come first); false at the patience.
void read_until_line(tcp::socket& socket, std::string& buffered, const std::string& expected) {
  while (read_line(socket, buffered) != expected) {
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(chat_between_three_clients) {
  server_process server(arguments());
  std::vector<tcp::socket> clients;
  std::vector<std::string> buffered(3);
  for (int i = 0; i < 3; ++i) {
    clients.push_back(connect_to(server.endpoint()));
    const auto hello = "hello from " + std::to_string(i) + "\n";
    write_all(clients[i], hello);
    read_until_line(clients[i], buffered[i], hello);  // in the room
  }
  write_all(clients[0], "first line\n");
  write_all(clients[2], "second line\n");
  for (int i = 0; i < 3; ++i) {
    read_until_line(clients[i], buffered[i], "first line\n");
    read_until_line(clients[i], buffered[i], "second line\n");
  }
  // A line over 4 KiB ends its sender's session only.
  write_all(clients[1], std::string(5000, 'x') + "\n");
  const auto closed = wait_for_close(clients[1]);
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  write_all(clients[2], "still here\n");
  read_until_line(clients[0], buffered[0], "still here\n");
  // SIGTERM: the idle sessions end at once, cleanly.
  server.signal(SIGTERM);
  BOOST_TEST((wait_for_close(clients[0]) == asio::error::eof));
  BOOST_TEST((wait_for_close(clients[2]) == asio::error::eof));
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos, server.output());
}

BOOST_AUTO_TEST_CASE(chat_a_slow_client_is_disconnected_and_never_blocks_the_room) {
  server_process server(arguments({"--outbox", "64"}));
  // The slow client's small receive buffer fills after a few lines; the fast client reads all the
  // time, so its outbox of 64 lines never fills.
  tcp::socket slow(io, tcp::v4());
  slow.set_option(asio::socket_base::receive_buffer_size(4096));
  bool connected = false;
  slow.async_connect(server.endpoint(), [&](boost::system::error_code e) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    connected = true;
  });
  run_until(connected, "connect");
  std::string slow_in, fast_in;
  write_all(slow, "slow\n");
  read_until_line(slow, slow_in, "slow\n");  // in the room; it reads nothing more
  auto fast = connect_to(server.endpoint());
  write_all(fast, "fast\n");
  read_until_line(fast, fast_in, "fast\n");
  // More than the socket buffers between the server and the slow client hold: its outbox fills.
  const std::string line = std::string(4000, 'y') + "\n";
  std::string lines;
  for (int i = 0; i < 2000; ++i) lines += line;
  const auto echoed = write_while_reading(fast, lines, fast, lines.size());
  BOOST_TEST((echoed == lines));
  const auto closed = wait_for_close(slow);  // (after what it had been sent)
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  write_all(fast, "after\n");
  BOOST_TEST(read_line(fast, fast_in) == "after\n");
  BOOST_TEST(server.interrupt() == 0);
}
