// The client that drives each ported example, as a user would with nc: it starts the server
// program on a free port, talks to it over TCP, stops it with SIGINT with connections still open
// and checks that it exits with status 0. Usage (from CTest):
//   asio_examples_client --run_test=<scenario> -- <server program> [server arguments...]
// Every wait is bounded (patience); the client never sleeps to let the server get somewhere.
#define BOOST_TEST_MODULE coral ports of the Asio examples
#include "../server_process.hpp"

using namespace server_test;

BOOST_AUTO_TEST_CASE(echo) {
  server_process server({"0"});
  // Two clients at once, each sending more than one read of the server takes, interleaved.
  auto first = connect_to(server.endpoint());
  auto second = connect_to(server.endpoint());
  const auto a = pattern(100'000, 1), b = pattern(70'000, 2);
  std::string got_a(a.size(), '\0'), got_b(b.size(), '\0');
  int pending = 4;
  bool done = false;
  auto one_done = [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    done = --pending == 0;
  };
  asio::async_write(first, asio::buffer(a), one_done);
  asio::async_write(second, asio::buffer(b), one_done);
  asio::async_read(first, asio::buffer(got_a), one_done);
  asio::async_read(second, asio::buffer(got_b), one_done);
  run_until(done, "both echoes");
  BOOST_TEST((got_a == a));
  BOOST_TEST((got_b == b));
  // One client leaves; the other is still served, and still connected when the server stops.
  second.close();
  write_all(first, "still there\n");
  BOOST_TEST(read_exactly(first, 12) == "still there\n");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(chat) {
  server_process server({"0"});
  auto alice = connect_to(server.endpoint());
  std::string alice_in, bob_in, carol_in;
  write_all(alice, "alice: hello\n");
  BOOST_TEST(read_line(alice, alice_in) == "alice: hello\n");  // alice is in the room
  auto bob = connect_to(server.endpoint());
  BOOST_TEST(read_line(bob, bob_in) == "alice: hello\n");  // the recent messages, on joining
  write_all(bob, "bob: hi alice\n");
  BOOST_TEST(read_line(alice, alice_in) == "bob: hi alice\n");
  BOOST_TEST(read_line(bob, bob_in) == "bob: hi alice\n");
  // A line longer than the session's 1024-byte buffer ends that session only.
  auto carol = connect_to(server.endpoint());
  BOOST_TEST(read_line(carol, carol_in) == "alice: hello\n");
  BOOST_TEST(read_line(carol, carol_in) == "bob: hi alice\n");
  write_all(carol, std::string(2000, 'x'));
  const auto closed = wait_for_close(carol);
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  write_all(alice, "alice: still here\n");
  BOOST_TEST(read_line(bob, bob_in) == "alice: still here\n");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(watchdog) {
  // The server's idle time is the second argument: 1.5 s.
  constexpr auto idle = 1500ms;
  server_process server({"0", std::to_string(idle.count())});
  auto client = connect_to(server.endpoint());
  for (int i = 0; i < 3; ++i) {
    write_all(client, "ping\n");
    BOOST_TEST(read_exactly(client, 5) == "ping\n");
  }
  const auto last_activity = clock_type::now();
  const auto closed = wait_for_close(client);
  const auto quiet = clock_type::now() - last_activity;
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  // Closed by the watchdog, not before the idle time (a lower bound: it cannot fail on a slow machine).
  BOOST_TEST(quiet >= idle - 100ms, std::chrono::duration<double>(quiet).count() << " s");
  auto other = connect_to(server.endpoint());  // the server goes on
  write_all(other, "pong\n");
  BOOST_TEST(read_exactly(other, 5) == "pong\n");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(proxy) {
  // The proxy forwards to a target this client plays; tokens of 1 KiB every 20 ms, 4 buffered.
  constexpr std::size_t bytes_per_token = 1024, tokens = 4;
  constexpr auto interval = 20ms;
  tcp::acceptor target_acceptor(io, {asio::ip::address_v4::loopback(), 0});
  server_process server({"0", std::to_string(target_acceptor.local_endpoint().port()), std::to_string(bytes_per_token),
                         std::to_string(interval.count()), std::to_string(tokens)});
  auto client = connect_to(server.endpoint());
  tcp::socket target(io);
  bool accepted = false;
  target_acceptor.async_accept(target, [&](boost::system::error_code e) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    accepted = true;
  });
  run_until(accepted, "the proxy to connect to its target");

  const std::size_t size = 40 * bytes_per_token;
  const auto upstream = pattern(size, 3);
  const auto start = clock_type::now();
  const auto received = write_while_reading(client, upstream, target, size);
  const auto took = clock_type::now() - start;
  BOOST_TEST((received == upstream));
  // Throttled: the buffered tokens and the one in production pass at once, the rest one per
  // interval. A lower bound, so a slow machine cannot fail it.
  const auto at_least = (size / bytes_per_token - tokens - 2) * interval;
  BOOST_TEST(took >= at_least * 8 / 10, std::chrono::duration<double>(took).count() << " s");
  // And the other way.
  const auto downstream = pattern(3000, 4);
  write_all(target, downstream);
  BOOST_TEST((read_exactly(client, downstream.size()) == downstream));
  BOOST_TEST(server.interrupt() == 0);
}
