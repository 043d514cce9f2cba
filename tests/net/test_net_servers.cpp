// Smoke and robustness tests of the network demos (examples/net), driven as a user would drive
// them: started on a free port, hit by clients, stopped with a signal, exit status checked.
//   test_net_servers --run_test=<scenario> -- <server program> [--threads N]
#define BOOST_TEST_MODULE coral network demos
#include <sys/resource.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <memory>
#include <set>

#include "../../examples/net/chat_session.hpp"
#include "../server_process.hpp"

using namespace server_test;

namespace {

// The error of a connect to `endpoint` (none: it was accepted).
boost::system::error_code connect_error(const tcp::endpoint& endpoint) {
  boost::system::error_code error;
  try_connect(endpoint, error);
  return error;
}

// Whether this machine has ::1.
bool ipv6_loopback() {
  tcp::acceptor probe(io);
  boost::system::error_code error;
  probe.open(tcp::v6(), error);
  if (!error) probe.bind({asio::ip::address_v6::loopback(), 0}, error);
  return !error;
}

// Runs the server with `arguments` until it exits by itself (it must fail to start): what it
// said, and its exit status.
std::pair<std::string, int> run_to_exit(const std::vector<std::string>& arguments) {
  std::string command = boost::unit_test::framework::master_test_suite().argv[1];
  for (const auto& a : arguments) command += " '" + a + "'";
  return run_command(command);
}

}  // namespace

BOOST_AUTO_TEST_CASE(echo_bytes) {
  server_process server(server_arguments());
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
  server_process server(server_arguments({"--idle-timeout-ms", std::to_string(idle.count())}));
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

BOOST_AUTO_TEST_CASE(echo_a_client_that_never_reads_is_dropped_after_the_idle_timeout) {
  // It sends, and never reads the echo: the server's write stalls. Without a time-out on that
  // write the session (and this client's write) would wait forever.
  server_process server(server_arguments({"--idle-timeout-ms", "300"}));
  auto client = connect_to(server.endpoint(), 4096);
  const std::string flood(64 << 20, 'f');  // more than every buffer on the way holds
  boost::system::error_code error;
  bool done = false;
  asio::async_write(client, asio::buffer(flood), [&](boost::system::error_code e, std::size_t) {
    error = e;
    done = true;
  });
  run_until(done, "the server to drop the client");
  BOOST_TEST((error == asio::error::connection_reset || error == asio::error::broken_pipe), error.message());
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(echo_graceful_shutdown_ends_idle_sessions_at_once) {
  server_process server(server_arguments());
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
  server_process server(server_arguments());
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
  // Lines from two senders may come in either order (their sessions run on different threads).
  for (int i = 0; i < 3; ++i) {
    std::set<std::string> got;
    while (got.size() < 2) {
      const auto line = read_line(clients[i], buffered[i]);
      if (line == "first line\n" || line == "second line\n") got.insert(line);
    }
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

BOOST_AUTO_TEST_CASE(chat_lines_that_arrive_together_are_all_delivered) {
  // One read may take several lines from the socket: none may wait there for the client's next
  // bytes (which, here, never come).
  server_process server(server_arguments());
  auto a = connect_to(server.endpoint());
  auto b = connect_to(server.endpoint());
  std::string a_in, b_in;
  write_all(a, "a\n");
  read_until_line(a, a_in, "a\n");
  write_all(b, "b\n");
  read_until_line(b, b_in, "b\n");
  write_all(a, "first\nsecond\nthird\n");
  for (const char* expected : {"first\n", "second\n", "third\n"}) BOOST_TEST(read_line(b, b_in) == expected);
  BOOST_TEST(server.interrupt() == 0);
}

namespace {

// A slow client and a fast one in the room; the fast one sends `batches` batches of 16 lines of
// 4 KB, each read back before the next is sent (however late this process reads on a loaded
// machine, the fast client's backlog never holds more than one batch). The slow client, whose
// receive buffer is small, reads nothing after joining.
void flood_past_a_slow_client(tcp::socket& slow, tcp::socket& fast, int batches) {
  std::string slow_in, fast_in;
  write_all(slow, "slow\n");
  read_until_line(slow, slow_in, "slow\n");  // in the room; it reads nothing more
  write_all(fast, "fast\n");
  read_until_line(fast, fast_in, "fast\n");
  const std::string line = std::string(4000, 'y') + "\n";
  std::string batch;
  for (int i = 0; i < 16; ++i) batch += line;
  for (int i = 0; i < batches; ++i) {
    const auto echoed = write_while_reading(fast, batch, fast, batch.size());
    BOOST_TEST_REQUIRE((echoed == batch));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(chat_a_client_whose_backlog_passes_the_cap_is_dropped_and_never_blocks_the_room) {
  server_process server(server_arguments({"--backlog-bytes", "262144"}));
  auto slow = connect_to(server.endpoint(), 4096);
  auto fast = connect_to(server.endpoint());
  flood_past_a_slow_client(slow, fast, 125);  // 8 MB: far more than the socket buffers
  server.wait_for_output("dropped a client: it fell behind: its backlog would pass 262144 bytes");
  const auto closed = wait_for_close(slow);  // (after what it had been sent)
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  std::string fast_in;
  write_all(fast, "after\n");
  BOOST_TEST(read_line(fast, fast_in) == "after\n");
  BOOST_TEST(server.interrupt() == 0);
  BOOST_TEST(
      server.output().find("dropped a client", server.output().find("dropped a client") + 1) == std::string::npos,
      server.output());  // the fast client never was
}

BOOST_AUTO_TEST_CASE(chat_a_backlog_counts_what_each_queued_line_costs) {
  // The room's delivery to a client whose writer takes nothing (the chat session's own
  // participant, without a server): empty lines are one byte each, but each costs a std::string
  // to hold. Counted in bytes alone, a 256 KiB cap would let 262,144 of them (tens of MB) queue.
  net_demo::chat_demo::participant p(262144);
  const auto empty_line = std::make_shared<const std::string>("\n");
  std::size_t offered = 0;
  while (!p.dropped && offered < 262144) {
    p.offer(empty_line);
    ++offered;
  }
  BOOST_TEST(p.dropped);
  BOOST_TEST(offered == 262144 / (1 + net_demo::chat_demo::queued_line_cost) + 1);
  BOOST_TEST(p.backlog <= 262144u);
}

BOOST_AUTO_TEST_CASE(chat_a_client_whose_socket_accepts_nothing_is_dropped_after_the_write_timeout) {
  // A backlog cap it never reaches: the write timeout drops it.
  server_process server(server_arguments({"--backlog-bytes", "100000000", "--write-timeout-ms", "300"}));
  auto slow = connect_to(server.endpoint(), 4096);
  auto fast = connect_to(server.endpoint());
  flood_past_a_slow_client(slow, fast, 125);  // 8 MB: far more than the socket buffers
  server.wait_for_output("dropped a client: it does not read: its socket accepted nothing for 300 ms");
  const auto closed = wait_for_close(slow);
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  std::string fast_in;
  write_all(fast, "after\n");
  BOOST_TEST(read_line(fast, fast_in) == "after\n");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(chat_a_burst_from_every_client_drops_no_one_who_reads) {
  // 70 clients send a line at the same moment: the room delivers 4,900 lines faster than the
  // writers are scheduled. Every client gets every line.
  server_process server(server_arguments());
  constexpr int n = 70;
  std::vector<tcp::socket> clients;
  std::vector<std::string> buffered(n);
  for (int i = 0; i < n; ++i) {
    clients.push_back(connect_to(server.endpoint()));
    const auto hello = "hello from " + std::to_string(i) + "\n";
    write_all(clients[i], hello);
    read_until_line(clients[i], buffered[i], hello);  // in the room
  }
  std::vector<std::string> lines(n);
  int pending = n;
  bool sent = false;
  for (int i = 0; i < n; ++i) {
    lines[i] = "burst " + std::to_string(i) + "\n";
    asio::async_write(clients[i], asio::buffer(lines[i]), [&](boost::system::error_code e, std::size_t) {
      BOOST_REQUIRE_MESSAGE(!e, e.message());
      sent = --pending == 0;
    });
  }
  run_until(sent, "every burst line sent");
  for (int i = 0; i < n; ++i) {
    std::set<std::string> got;
    while (got.size() < n) {
      const auto line = read_line(clients[i], buffered[i]);
      if (line.starts_with("burst ")) BOOST_REQUIRE_MESSAGE(got.insert(line).second, "twice: " << line);
    }
  }
  BOOST_TEST(server.interrupt() == 0);
  BOOST_TEST(server.output().find("dropped") == std::string::npos, server.output());
}

BOOST_AUTO_TEST_CASE(chat_300_lines_in_one_write_reach_every_reader_in_order) {
  server_process server(server_arguments());
  constexpr int listeners = 5;
  std::vector<tcp::socket> clients;
  std::vector<std::string> buffered(listeners + 1);
  for (int i = 0; i <= listeners; ++i) {
    clients.push_back(connect_to(server.endpoint()));
    const auto hello = "hello from " + std::to_string(i) + "\n";
    write_all(clients[i], hello);
    read_until_line(clients[i], buffered[i], hello);
  }
  std::string burst;
  for (int k = 0; k < 300; ++k) burst += "line " + std::to_string(k) + "\n";
  write_all(clients[0], burst);
  for (int i = 1; i <= listeners; ++i) {
    int next = 0;
    while (next < 300) {
      const auto line = read_line(clients[i], buffered[i]);
      if (!line.starts_with("line ")) continue;  // (another client's hello)
      BOOST_TEST_REQUIRE(line == "line " + std::to_string(next) + "\n");
      ++next;
    }
  }
  BOOST_TEST(server.interrupt() == 0);
  BOOST_TEST(server.output().find("dropped") == std::string::npos, server.output());
}

namespace {

// What a line server (echo, chat) sends a connection past --max-connections, then its close.
std::string refused_line(const tcp::endpoint& server) {
  auto client = connect_to(server);
  std::string buffered;
  const auto line = read_line(client, buffered);
  const auto closed = wait_for_close(client);
  BOOST_TEST((closed == asio::error::eof), closed.message());
  return line;
}

// A client of a line server (echo, chat) that holds a session: its line comes back. Connections
// that find every slot taken (one that a session just ended may not be free yet) are refused:
// the next try comes once the refusal has been read.
tcp::socket served_line_client(const tcp::endpoint& server) {
  const auto deadline = clock_type::now() + patience;
  for (;;) {
    auto client = connect_to(server);
    write_all(client, "here\n");
    std::string buffered;
    const auto line = read_line(client, buffered);
    if (line == "here\n") return client;
    BOOST_TEST_REQUIRE(line == "server full: too many connections\n");
    BOOST_REQUIRE_MESSAGE(clock_type::now() < deadline, "a slot never came back");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(line_connections_past_the_cap_get_a_line_then_the_close) {
  // The same for echo_server and chat_server: each session holds a slot until it ends, however it
  // ends, and gives it back once.
  server_process server(server_arguments({"--max-connections", "3"}));
  std::vector<tcp::socket> held;
  for (int i = 0; i < 3; ++i) held.push_back(served_line_client(server.endpoint()));
  BOOST_TEST(refused_line(server.endpoint()) == "server full: too many connections\n");
  BOOST_TEST(refused_line(server.endpoint()) == "server full: too many connections\n");
  // Sessions end: a close, a reset, and one the server ends (a line over 4 KiB for chat; echo
  // echoes it and the client closes).
  held[0].close();
  held[1].set_option(asio::socket_base::linger(true, 0));
  held[1].close();
  write_all(held[2], std::string(5000, 'x') + "\n");
  boost::system::error_code ignored;  // (chat may have reset the connection already)
  held[2].shutdown(tcp::socket::shutdown_send, ignored);
  wait_for_close(held[2]);
  held.clear();
  // Every slot comes back, and none twice.
  for (int i = 0; i < 3; ++i) held.push_back(served_line_client(server.endpoint()));
  BOOST_TEST(refused_line(server.endpoint()) == "server full: too many connections\n");
  BOOST_TEST(server.interrupt() == 0, server.output());
  BOOST_TEST(server.output().find("accept: 3 connections: refusing more") != std::string::npos, server.output());
}

BOOST_AUTO_TEST_CASE(chat_a_line_is_one_buffer_however_many_receive_it) {
  net_demo::chat_demo::room r;
  std::vector<std::shared_ptr<net_demo::chat_demo::participant>> everyone;
  for (int i = 0; i < 3; ++i) {
    everyone.push_back(std::make_shared<net_demo::chat_demo::participant>(1 << 20));
    r.join(everyone.back());
  }
  r.deliver("hello\n");
  std::set<const std::string*> buffers;
  for (auto& p : everyone) {
    auto got = p->outbox.try_receive();
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(**got == "hello\n");
    buffers.insert(got->get());
    BOOST_TEST(p->backlog == net_demo::chat_demo::cost_of("hello\n"));
  }
  BOOST_TEST(buffers.size() == 1u);
}

BOOST_AUTO_TEST_CASE(chat_a_line_not_complete_in_time_ends_its_session) {
  server_process server(server_arguments({"--line-timeout-ms", "300"}));
  auto slow = connect_to(server.endpoint());
  auto other = connect_to(server.endpoint());
  std::string slow_in, other_in;
  write_all(other, "other\n");
  read_until_line(other, other_in, "other\n");
  // A whole line, then the start of one that never ends, in one write.
  write_all(slow, "whole\nstarted");
  read_until_line(slow, slow_in, "whole\n");
  read_until_line(other, other_in, "whole\n");
  const auto closed = wait_for_close(slow);
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  // A line that never ends from the first byte.
  auto silent = connect_to(server.endpoint());
  write_all(silent, "s");
  const auto silent_closed = wait_for_close(silent);
  BOOST_TEST((silent_closed == asio::error::eof || silent_closed == asio::error::connection_reset),
             silent_closed.message());
  // The room goes on; nothing of the unfinished lines was delivered.
  write_all(other, "still here\n");
  BOOST_TEST(read_line(other, other_in) == "still here\n");
  BOOST_TEST(server.interrupt() == 0, server.output());
}

// HTTP: requests written by hand (as a client may write them), responses parsed by Beast.
namespace {

namespace http = boost::beast::http;
using http_response = http::response<http::string_body>;

struct http_connection {
  tcp::socket socket;
  boost::beast::flat_buffer buffer;

  explicit http_connection(const tcp::endpoint& server) : socket(connect_to(server)) {}

  void send(const std::string& raw) { write_all(socket, raw); }

  http_response receive() {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    bool done = false;
    http::async_read(socket, buffer, parser, [&](boost::system::error_code e, std::size_t) {
      BOOST_REQUIRE_MESSAGE(!e, "reading a response: " << e.message());
      done = true;
    });
    run_until(done, "a response");
    return parser.release();
  }

  http_response get(const std::string& target) {
    send("GET " + target + " HTTP/1.1\r\nHost: test\r\n\r\n");
    return receive();
  }
};

std::string post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

long stat(const tcp::endpoint& server, const std::string& name) {
  http_connection c(server);
  const auto res = c.get("/stats");
  const auto at = res.body().find("\"" + name + "\":");
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, res.body());
  return std::stol(res.body().substr(at + name.size() + 3));
}

// Asks /stats until `name` is `value` (the server's state changes on its own threads).
void wait_for_stat(const tcp::endpoint& server, const std::string& name, long value) {
  const auto deadline = clock_type::now() + patience;
  while (stat(server, name) != value) {
    BOOST_REQUIRE_MESSAGE(clock_type::now() < deadline, name << " never became " << value);
  }
}

// What the server sends until it closes the connection, once this client has said it sends no
// more, and the error that ended it (eof: a graceful close).
std::pair<std::string, boost::system::error_code> rest_until_close(http_connection& c) {
  c.socket.shutdown(tcp::socket::shutdown_send);
  std::string rest(static_cast<const char*>(c.buffer.data().data()), c.buffer.size());
  c.buffer.consume(c.buffer.size());
  boost::system::error_code error;
  bool done = false;
  asio::async_read(c.socket, asio::dynamic_buffer(rest), [&](boost::system::error_code e, std::size_t) {
    error = e;
    done = true;
  });
  run_until(done, "the server to close the connection");
  return {rest, error};
}

// The next response is a refusal: `status`, "Connection: close", then nothing but a graceful close.
void expect_refusal(http_connection& c, int status, const std::string& what) {
  const auto res = c.receive();
  BOOST_TEST(res.result_int() == status, what);
  BOOST_TEST(res[http::field::connection] == "close", what);
  BOOST_TEST(!res.keep_alive(), what);
  const auto [rest, error] = rest_until_close(c);
  BOOST_TEST(rest.empty(), what << ": after the refusal: " << rest);
  BOOST_TEST((error == asio::error::eof), what << ": " << error.message());
}

// How many times `part` occurs in `text`.
int occurrences(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The private listener of a server started with --debug-port, which it announces after its port.
tcp::endpoint debug_endpoint(server_process& server) {
  server.wait_for_output("debug routes on 127.0.0.1:");
  const auto& said = server.output();
  const auto at = said.find("debug routes on 127.0.0.1:") + 26;
  return {asio::ip::address_v4::loopback(), static_cast<unsigned short>(std::stoi(said.substr(at)))};
}

// The response to `raw`, read as bytes up to the end of its header (the status line as sent).
std::string raw_header(http_connection& c, const std::string& raw) {
  c.send(raw);
  auto buffered = [&] { return std::string(static_cast<const char*>(c.buffer.data().data()), c.buffer.size()); };
  while (buffered().find("\r\n\r\n") == std::string::npos) {
    bool done = false;
    c.socket.async_read_some(c.buffer.prepare(4096), [&](boost::system::error_code e, std::size_t n) {
      BOOST_REQUIRE_MESSAGE(!e, "reading a header: " << e.message());
      c.buffer.commit(n);
      done = true;
    });
    run_until(done, "a response's header");
  }
  const auto all = buffered();
  return all.substr(0, all.find("\r\n\r\n") + 4);
}

// rest_until_close(c) after the response whose header raw_header() returned.
std::pair<std::string, boost::system::error_code> rest_after(http_connection& c, const std::string& header) {
  c.buffer.consume(header.size());
  return rest_until_close(c);
}

// A response to HEAD: whatever its Content-Length says, no body follows.
http::response<http::empty_body> head(http_connection& c, const std::string& target) {
  c.send("HEAD " + target + " HTTP/1.1\r\nHost: test\r\n\r\n");
  http::response_parser<http::empty_body> parser;
  parser.skip(true);
  bool done = false;
  http::async_read(c.socket, c.buffer, parser, [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, "reading a response to HEAD: " << e.message());
    done = true;
  });
  run_until(done, "a response to HEAD");
  return parser.release();
}

}  // namespace

BOOST_AUTO_TEST_CASE(http_routes_keep_alive_and_pipelining) {
  server_process server(server_arguments());
  http_connection c(server.endpoint());
  auto res = c.get("/");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello from coral\n");
  c.send(post("/echo", "some body"));
  res = c.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "some body");
  BOOST_TEST(c.get("/nowhere").result_int() == 404);
  BOOST_TEST(c.get("/sleep?ms=20").body() == "slept 20 ms\n");
  BOOST_TEST(c.get("/sleep?ms=x").result_int() == 400);
  res = c.get("/stream?n=3");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.chunked());
  BOOST_TEST(res.body() == "chunk 0\nchunk 1\nchunk 2\n");
  // Pipelined: two requests in one write, two responses in order.
  c.send("GET /sleep?ms=50 HTTP/1.1\r\nHost: test\r\n\r\nGET / HTTP/1.1\r\nHost: test\r\n\r\n");
  BOOST_TEST(c.receive().body() == "slept 50 ms\n");
  BOOST_TEST(c.receive().body() == "hello from coral\n");
  res = c.get("/stats");
  BOOST_TEST(res[http::field::content_type] == "application/json");
  BOOST_TEST(res.body().find("\"open_connections\":1") != std::string::npos, res.body());
  BOOST_TEST(res.body().find("\"requests_served\":9") != std::string::npos, res.body());
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_bad_requests_are_refused_and_closed) {
  server_process server(server_arguments({"--request-timeout-ms", "300"}));
  auto refused = [&](const std::string& raw, int status) {
    http_connection c(server.endpoint());
    if (!raw.empty()) c.send(raw);
    const auto res = c.receive();
    BOOST_TEST(res.result_int() == status, raw.substr(0, 40));
    BOOST_TEST(!res.keep_alive());
    const auto closed = wait_for_close(c.socket);
    BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  };
  refused("NOT HTTP AT ALL\r\n\r\n", 400);
  refused("GET / HTTP/1.1\r\nHost: test\r\nX-Big: " + std::string(9000, 'h') + "\r\n\r\n", 431);
  refused("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 2000000\r\n\r\n", 413);
  refused("GET / HTTP/1.1\r\nHost: te", 408);  // and never the rest (slowloris)
  // What Beast parses in one piece beside the header: a chunk-size line, a trailer section. (To a
  // route that does not echo the body: /echo's response has begun once a piece of it has come.)
  refused("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n1;e=" + std::string(100'000, 'a') +
              "\r\nx\r\n0\r\n\r\n",
          400);
  refused("POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-Trailer: " +
              std::string(100'000, 't') + "\r\n\r\n",
          400);

  // The server still serves.
  http_connection c(server.endpoint());
  BOOST_TEST(c.get("/").result_int() == 200);
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_a_stream_to_an_http_1_0_client_is_not_chunked) {
  // HTTP/1.0 knows no chunked encoding (RFC 9112 6.1): the body comes as it is, the close ends it.
  server_process server(server_arguments());
  http_connection c(server.endpoint());
  c.send("GET /stream?n=2 HTTP/1.0\r\n\r\n");
  std::string raw;
  bool done = false;
  asio::async_read(c.socket, asio::dynamic_buffer(raw), [&](boost::system::error_code e, std::size_t) {
    BOOST_TEST((e == asio::error::eof), e.message());
    done = true;
  });
  run_until(done, "the whole stream");
  BOOST_TEST(raw.find("HTTP/1.1 200") == 0, raw);  // (every response says HTTP/1.1)
  BOOST_TEST(raw.find("Connection: close\r\n") != std::string::npos, raw);
  BOOST_TEST(raw.find("chunked") == std::string::npos, raw);
  BOOST_TEST(raw.ends_with("\r\n\r\nchunk 0\nchunk 1\n"), raw);
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_head_is_answered_as_get_without_the_body) {
  server_process server(server_arguments());
  http_connection c(server.endpoint());
  const auto get = c.get("/");
  auto res = head(c, "/");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res[http::field::content_length] == std::to_string(get.body().size()));
  BOOST_TEST(res[http::field::content_type] == "text/plain");
  BOOST_TEST(res.keep_alive());
  res = head(c, "/stats");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res[http::field::content_type] == "application/json");
  res = head(c, "/stream?n=2");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.chunked());
  BOOST_TEST(res.keep_alive());
  res = head(c, "/nowhere");
  BOOST_TEST(res.result_int() == 404);
  // A 405 names what is allowed (RFC 9110 15.5.6).
  res = head(c, "/echo");
  BOOST_TEST(res.result_int() == 405);
  BOOST_TEST(res[http::field::allow] == "POST");
  c.send(post("/", "x"));
  const auto refused = c.receive();
  BOOST_TEST(refused.result_int() == 405);
  BOOST_TEST(refused[http::field::allow] == "GET, HEAD");
  // Nothing of the HEAD responses' bodies came: the next response parses from its status line.
  const auto next = c.get("/");
  BOOST_TEST(next.result_int() == 200);
  BOOST_TEST(next.body() == "hello from coral\n");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_a_body_whose_length_cannot_be_known_is_refused) {
  // RFC 9112 6.3: a Transfer-Encoding whose final coding is not chunked leaves the body's length
  // unknown. Read as bodiless, its body would be parsed as the next request (request smuggling).
  server_process server(server_arguments());
  for (const std::string coding : {"gzip", "xchunked", "chunked, gzip"}) {
    http_connection c(server.endpoint());
    c.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: " + coding +
           "\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n");
    expect_refusal(c, 400, coding);
  }
  {
    // HTTP/1.0 has no transfer codings (RFC 9112 6.1).
    http_connection c(server.endpoint());
    c.send("POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    expect_refusal(c, 400, "HTTP/1.0 with a transfer coding");
  }
  // A coding before the final chunked: the length is known, but the server decodes no gzip (RFC
  // 9112 6.1: 501), in one Transfer-Encoding line or in two.
  for (const std::string codings :
       {"Transfer-Encoding: gzip, chunked\r\n", "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"}) {
    http_connection c(server.endpoint());
    c.send("POST /echo HTTP/1.1\r\nHost: test\r\n" + codings + "\r\n5\r\nhello\r\n0\r\n\r\n");
    expect_refusal(c, 501, codings);
  }
  http_connection c(server.endpoint());
  c.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  const auto res = c.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello");
  BOOST_TEST(res.keep_alive());
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_a_transfer_encoding_not_exactly_the_token_chunked_is_refused) {
  // RFC 9112 6.1, 6.3; RFC 9110 5.6.1: the field is a list of tokens, the last one chunked. A
  // reader that took "chunked;q=1" as "not chunked" would find the body's end elsewhere than the
  // server: what follows the refusal is never answered (it would be a smuggled request).
  server_process server(server_arguments());
  const std::string refused[] = {
      "Transfer-Encoding: chunked;q=1\r\n",
      "Transfer-Encoding: chunked ;q=1\r\n",
      "Transfer-Encoding: chunked\xA0\r\n",
      "Transfer-Encoding: chunked x\r\n",
      "Transfer-Encoding: \"chunked\"\r\n",
      "Transfer-Encoding: ,\r\n",
      "Transfer-Encoding: chunked, chunked\r\n",
      "Transfer-Encoding: gzip;q=1, chunked\r\n",
      "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked;q=1\r\n",
      "Transfer-Encoding: gzip x\r\nTransfer-Encoding: chunked\r\n",
      "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
      "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
  };
  for (const auto& field : refused) {
    http_connection c(server.endpoint());
    const auto header = raw_header(c, "POST /echo HTTP/1.1\r\nHost: test\r\n" + field + "\r\n5\r\nhello\r\n0\r\n\r\n" +
                                          "GET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n");
    BOOST_TEST(header.starts_with("HTTP/1.1 400 Bad Request\r\n"), field << header);
    BOOST_TEST(header.find("\r\nConnection: close\r\n") != std::string::npos, field << header);
    const auto [rest, error] = rest_after(c, header);
    // The refusal's body ("unsupported transfer encoding", or "bad request" where Beast's parser
    // refused the field first), and nothing more.
    BOOST_TEST((rest == "unsupported transfer encoding\n" || rest == "bad request\n"), field << rest);
    BOOST_TEST((error == asio::error::eof), field << error.message());
  }
  // Exactly chunked (a token, compared ignoring case, in one line or after empty list elements):
  // served, and the next request on the connection too.
  for (const std::string field : {"Transfer-Encoding: chunked\r\n", "Transfer-Encoding: Chunked\r\n",
                                  "Transfer-Encoding: , chunked ,\r\n", "Transfer-Encoding:\tchunked\t\r\n"}) {
    http_connection c(server.endpoint());
    c.send("POST /echo HTTP/1.1\r\nHost: test\r\n" + field +
           "\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: test\r\n\r\n");
    const auto res = c.receive();
    BOOST_TEST(res.result_int() == 200, field);
    BOOST_TEST(res.body() == "hello", field);
    BOOST_TEST(res.keep_alive(), field);
    BOOST_TEST(c.receive().body() == "hello from coral\n", field);
  }
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_versions_every_response_says_http_1_1) {
  server_process server(server_arguments());
  // HTTP/1.x with x > 1 is served as HTTP/1.1 (RFC 9110 6.2): persistent, pipelined.
  for (const std::string version : {"HTTP/1.2", "HTTP/1.9"}) {
    http_connection c(server.endpoint());
    const auto header =
        raw_header(c, "GET / " + version + "\r\nHost: test\r\n\r\nGET /stats " + version + "\r\nHost: test\r\n\r\n");
    BOOST_TEST(header.starts_with("HTTP/1.1 200 OK\r\n"), version << header);
    BOOST_TEST(header.find("Connection") == std::string::npos, version << header);
    BOOST_TEST(c.receive().body() == "hello from coral\n", version);
    const auto stats = c.receive();
    BOOST_TEST(stats.result_int() == 200, version);
    BOOST_TEST(stats.version() == 11, version);
  }
  // HTTP/2 and later, and before 1.0: 505, and the close.
  for (const std::string version : {"HTTP/2.0", "HTTP/3.1", "HTTP/9.9", "HTTP/0.9"}) {
    http_connection c(server.endpoint());
    const auto header =
        raw_header(c, "GET / " + version + "\r\nHost: test\r\n\r\nGET / HTTP/1.1\r\nHost: test\r\n\r\n");
    BOOST_TEST(header.starts_with("HTTP/1.1 505 HTTP Version Not Supported\r\n"), version << header);
    BOOST_TEST(header.find("\r\nConnection: close\r\n") != std::string::npos, version << header);
    const auto [rest, error] = rest_after(c, header);
    BOOST_TEST(rest == "HTTP version not supported\n", version << rest);
    BOOST_TEST((error == asio::error::eof), version << error.message());
  }
  {
    // The HTTP/2 connection preface, as a client that assumes HTTP/2 sends it.
    http_connection c(server.endpoint());
    const auto header = raw_header(c, std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    BOOST_TEST(header.starts_with("HTTP/1.1 505 "), header);
  }
  {
    // HTTP/1.0 without keep-alive: an HTTP/1.1 response that says close; what follows is unread.
    http_connection c(server.endpoint());
    const auto header = raw_header(c, "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n");
    BOOST_TEST(header.starts_with("HTTP/1.1 200 OK\r\n"), header);
    BOOST_TEST(header.find("\r\nConnection: close\r\n") != std::string::npos, header);
    const auto [rest, error] = rest_after(c, header);
    BOOST_TEST(rest == "hello from coral\n", rest);
    BOOST_TEST((error == asio::error::eof), error.message());
  }
  {
    // HTTP/1.0 with keep-alive: the response says keep-alive, and the connection serves the next.
    http_connection c(server.endpoint());
    const auto header = raw_header(c,
                                   "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                                   "GET /sleep?ms=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                                   "GET /stats HTTP/1.0\r\n\r\n");
    BOOST_TEST(header.starts_with("HTTP/1.1 200 OK\r\n"), header);
    BOOST_TEST(header.find("\r\nConnection: keep-alive\r\n") != std::string::npos, header);
    BOOST_TEST(c.receive().body() == "hello from coral\n");
    const auto second = c.receive();
    BOOST_TEST(second.body() == "slept 1 ms\n");
    BOOST_TEST(second[http::field::connection] == "keep-alive");
    const auto third = c.receive();
    BOOST_TEST(third.result_int() == 200);
    BOOST_TEST(third[http::field::connection] == "close");
    const auto [rest, error] = rest_until_close(c);
    BOOST_TEST(rest.empty(), rest);
    BOOST_TEST((error == asio::error::eof), error.message());
  }
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_a_target_over_the_limit_is_414) {
  server_process server(server_arguments());
  // A request line that does not fit in the 8 KiB header limit: its target is too long (sent
  // whole, before reading: the refusal reaches the client all the same).
  for (const std::size_t length : {8200, 9000, 100'000}) {
    http_connection c(server.endpoint());
    const auto header = raw_header(c, "GET /" + std::string(length, 'a') + " HTTP/1.1\r\nHost: test\r\n\r\n" +
                                          "GET / HTTP/1.1\r\nHost: test\r\n\r\n");
    BOOST_TEST(header.starts_with("HTTP/1.1 414 URI Too Long\r\n"), length << header);
    BOOST_TEST(header.find("\r\nConnection: close\r\n") != std::string::npos, header);
    const auto [rest, error] = rest_after(c, header);
    BOOST_TEST(rest == "request target too long\n", rest);
    BOOST_TEST((error == asio::error::eof), error.message());
  }
  // The request line and the fields have a limit each: a long target with fields that fit is
  // served; fields that do not fit are 431, with a target that fits.
  {
    http_connection c(server.endpoint());
    c.send("GET /?" + std::string(8000, 'q') + " HTTP/1.1\r\nHost: test\r\nX-Big: " + std::string(8000, 'h') +
           "\r\n\r\n");
    BOOST_TEST(c.receive().result_int() == 200);
    c.send("GET /?" + std::string(4000, 'q') + " HTTP/1.1\r\nHost: test\r\nX-Big: " + std::string(9000, 'h') +
           "\r\n\r\n");
    expect_refusal(c, 431, "a long target with fields over the limit");
  }
  // A request line that its client ends in the middle of: 400, as for a header cut short.
  {
    http_connection c(server.endpoint());
    c.send("GET /sta");
    c.socket.shutdown(tcp::socket::shutdown_send);
    const auto res = c.receive();
    BOOST_TEST(res.result_int() == 400);
    BOOST_TEST(!res.keep_alive());
    BOOST_TEST((wait_for_close(c.socket) == asio::error::eof));
  }
  // A long target that fits is served, and the connection goes on.
  http_connection c(server.endpoint());
  auto res = c.get("/?" + std::string(7000, 'q'));
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.keep_alive());
  BOOST_TEST(c.get("/").result_int() == 200);
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_an_unknown_method_is_501_a_known_one_not_allowed_405) {
  server_process server(server_arguments());
  // RFC 9110 15.6.2: a method the server does not recognise; then the close.
  for (const std::string method : {"FOO", "PROPFIND", "MKCOL", "get", "BREW"}) {
    http_connection c(server.endpoint());
    const auto header = raw_header(c, method + " / HTTP/1.1\r\nHost: test\r\n\r\nGET / HTTP/1.1\r\nHost: test\r\n\r\n");
    BOOST_TEST(header.starts_with("HTTP/1.1 501 Not Implemented\r\n"), method << header);
    BOOST_TEST(header.find("\r\nConnection: close\r\n") != std::string::npos, method << header);
    const auto [rest, error] = rest_after(c, header);
    BOOST_TEST(rest == "method not implemented\n", method << rest);
    BOOST_TEST((error == asio::error::eof), method << error.message());
  }
  // RFC 9110 15.5.6: a known method the route does not allow is 405 with Allow; its body is read,
  // and the connection serves the next request.
  http_connection c(server.endpoint());
  const std::pair<std::string, std::string> not_allowed[] = {
      {"DELETE / HTTP/1.1\r\nHost: test\r\n\r\n", "GET, HEAD"},
      {"PUT /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello", "POST"},
      {"OPTIONS /stats HTTP/1.1\r\nHost: test\r\n\r\n", "GET, HEAD"},
      {"PATCH /sleep?ms=1 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
       "GET, HEAD"},
      {"TRACE /echo HTTP/1.1\r\nHost: test\r\n\r\n", "POST"},
  };
  for (const auto& [raw, allow] : not_allowed) {
    c.send(raw + "GET / HTTP/1.1\r\nHost: test\r\n\r\n");
    const auto res = c.receive();
    BOOST_TEST(res.result_int() == 405, raw);
    BOOST_TEST(res.version() == 11, raw);
    BOOST_TEST(res[http::field::allow] == allow, raw);
    BOOST_TEST(res.keep_alive(), raw);
    BOOST_TEST(c.receive().body() == "hello from coral\n", raw);
  }
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_debug_routes_only_on_the_private_listener) {
  server_process server(server_arguments({"--debug-port", "0"}));
  const auto debug = debug_endpoint(server);
  BOOST_TEST(debug.port() != server.endpoint().port());
  // On the public listener the debug routes do not exist, however the path is spelt.
  http_connection c(server.endpoint());
  for (const std::string target : {"/debug/tasks", "/debug/tasks.json", "/debug%2Ftasks", "/debug%2ftasks.json",
                                   "/debug/tasks?limit=1", "http://test/debug/tasks", "/%64ebug/tasks"}) {
    const auto res = c.get(target);
    BOOST_TEST(res.result_int() == 404, target);
    BOOST_TEST(res.keep_alive(), target);
    BOOST_TEST(res.body().find("coral:") == std::string::npos, target << res.body());
  }
  // On the private one, they alone, each spelt one way: the path as sent, segment by segment.
  http_connection d(debug);
  auto res = d.get("/debug/tasks");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body().starts_with("coral: "), res.body());
  res = d.get("/debug/tasks.json");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body().find(",\"total\":") != std::string::npos, res.body());
  res = d.get("http://localhost/debug/tasks?limit=5");
  BOOST_TEST(res.result_int() == 200);
  for (const std::string target :
       {"/debug%2Ftasks", "/debug%2ftasks.json", "/debug/tasks/", "/debug//tasks", "/%64ebug/tasks",
        "/debug/tasks%2Ejson", "/", "/stats", "/echo", "/sleep?ms=1", "/stream?n=1"}) {
    res = d.get(target);
    BOOST_TEST(res.result_int() == 404, target);
    BOOST_TEST(res.keep_alive(), target);
  }
  d.send(post("/debug/tasks", "x"));
  res = d.receive();
  BOOST_TEST(res.result_int() == 405);
  BOOST_TEST(res[http::field::allow] == "GET, HEAD");
  BOOST_TEST(d.get("/debug/tasks").result_int() == 200);  // (the connection goes on)
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_the_private_listener_is_on_loopback_whatever_the_bind) {
  server_process server(server_arguments({"--bind", "0.0.0.0", "--debug-port", "0"}));
  const auto debug = debug_endpoint(server);
  // 127.0.0.2 reaches what listens on every address, not what listens on 127.0.0.1.
  const asio::ip::address other = asio::ip::make_address("127.0.0.2");
  BOOST_TEST(http_connection({other, server.endpoint().port()}).get("/").result_int() == 200);
  BOOST_TEST((connect_error({other, debug.port()}) == asio::error::connection_refused));
  BOOST_TEST(http_connection(debug).get("/debug/tasks").result_int() == 200);
  BOOST_TEST(server.interrupt() == 0);
  // And no private listener unless asked.
  server_process plain(server_arguments());
  BOOST_TEST(plain.interrupt() == 0);
  BOOST_TEST(plain.output().find("debug routes") == std::string::npos, plain.output());
}

// Every demo: where it listens.
BOOST_AUTO_TEST_CASE(a_server_listens_only_where_bound) {
  const asio::ip::address other = asio::ip::make_address("127.0.0.2");
  {
    // 127.0.0.1 unless told otherwise: not reachable through another address of the machine.
    server_process server(server_arguments());
    BOOST_TEST((connect_error(server.endpoint()) == boost::system::error_code()));
    BOOST_TEST((connect_error({other, server.endpoint().port()}) == asio::error::connection_refused));
    BOOST_TEST(server.interrupt() == 0);
  }
  {
    server_process server(server_arguments({"--bind", "0.0.0.0"}));
    BOOST_TEST((connect_error({other, server.endpoint().port()}) == boost::system::error_code()));
    BOOST_TEST(server.interrupt() == 0);
  }
  if (ipv6_loopback()) {
    server_process server(server_arguments({"--bind", "::1"}));
    const tcp::endpoint v6(asio::ip::address_v6::loopback(), server.endpoint().port());
    BOOST_TEST((connect_error(v6) == boost::system::error_code()));
    BOOST_TEST((connect_error(server.endpoint()) == asio::error::connection_refused));
    BOOST_TEST(server.interrupt() == 0);
  } else {
    BOOST_TEST_MESSAGE("no IPv6 loopback here: --bind ::1 not tried");
  }
  // An address that is not one: a clear error, status 2; one the machine does not have: status 1.
  const auto [bad, bad_status] = run_to_exit(server_arguments({"--bind", "localhost:80"}));
  BOOST_TEST(bad_status == 2, bad);
  BOOST_TEST(bad.find("--bind: not an IPv4 or IPv6 address: localhost:80") != std::string::npos, bad);
  const auto [absent, absent_status] = run_to_exit(server_arguments({"--bind", "192.0.2.1"}));
  BOOST_TEST(absent_status == 1, absent);
  BOOST_TEST(absent.find("cannot listen on 192.0.2.1:0") != std::string::npos, absent);
}

BOOST_AUTO_TEST_CASE(http_absolute_form_targets_are_served) {
  // RFC 9112 3.2.2: a server accepts the absolute form (as a proxy's client sends it).
  server_process server(server_arguments());
  http_connection c(server.endpoint());
  auto res = c.get("http://test/stats");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res[http::field::content_type] == "application/json");
  res = c.get("http://test");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello from coral\n");
  res = c.get("http://test/sleep?ms=5");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "slept 5 ms\n");
  res = c.get("http://test/nowhere");
  BOOST_TEST(res.result_int() == 404);
  BOOST_TEST(res.body() == "no such page: /nowhere\n");
  BOOST_TEST(res.keep_alive());
  res = c.get("http://[::1]:8080/stats");
  BOOST_TEST(res.result_int() == 200);
  for (const std::string target : {"ftp://test/", "*", "test:80", "http://", "http://@/", "http://[/", "http://a b/",
                                   "http://user@test/", "http://:80/"}) {
    http_connection refused(server.endpoint());
    refused.send("GET " + target + " HTTP/1.1\r\nHost: test\r\n\r\n");
    expect_refusal(refused, 400, target);
  }
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_1_1_requests_need_exactly_one_valid_host) {
  // RFC 9112 3.2.
  server_process server(server_arguments());
  for (const std::string headers : {"", "Host: a\r\nHost: b\r\n", "Host: a, b\r\n", "Host: a b/c@d\r\n",
                                    "Host: [::1\r\n", "Host: test:8o\r\n", "Host: :80\r\n"}) {
    http_connection c(server.endpoint());
    c.send("GET / HTTP/1.1\r\n" + headers + "\r\n");
    expect_refusal(c, 400, headers.empty() ? "no Host" : headers);
  }
  for (const std::string host : {"test:8080", "[::1]:80", "a%20b", "127.0.0.1"}) {
    http_connection c(server.endpoint());
    c.send("GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    const auto res = c.receive();
    BOOST_TEST(res.result_int() == 200, host);
  }
  http_connection old(server.endpoint());
  old.send("GET / HTTP/1.0\r\n\r\n");  // HTTP/1.0 has no Host to send
  const auto res = old.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.version() == 11);
  BOOST_TEST(res.body() == "hello from coral\n");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_expect_100_continue_is_answered_at_once) {
  server_process server(server_arguments());
  http_connection c(server.endpoint());
  c.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  BOOST_TEST(read_exactly(c.socket, 25) == "HTTP/1.1 100 Continue\r\n\r\n");
  c.send("hello");
  const auto res = c.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello");
  BOOST_TEST(res.keep_alive());
  // A request that will be refused anyway gets its final status without sending its body.
  c.send("POST /nowhere HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  expect_refusal(c, 404, "a page that does not exist");
  http_connection too_large(server.endpoint());
  too_large.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 2000000\r\nExpect: 100-continue\r\n\r\n");
  expect_refusal(too_large, 413, "a body over the limit");
  http_connection unknown(server.endpoint());
  unknown.send("GET / HTTP/1.1\r\nHost: test\r\nExpect: something-else\r\n\r\n");
  expect_refusal(unknown, 417, "an expectation the server does not know");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_a_refusal_reaches_a_client_still_sending) {
  // Closing with the client's bytes unread would reset the connection, and lose the refusal.
  server_process server(server_arguments());
  const std::pair<std::string, int> cases[] = {
      {"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 4000000\r\n\r\n" + std::string(4'000'000, 'b'), 413},
      {"GET / HTTP/1.1\r\nHost: test\r\nX-Long: " + std::string(20'000, 'h') + "\r\n\r\n", 431},
  };
  for (const auto& [raw, status] : cases) {
    http_connection c(server.endpoint());
    c.send(raw);  // all of it, before reading anything
    expect_refusal(c, status, std::to_string(status));
  }
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_empty_lines_before_a_request_are_ignored) {
  // RFC 9112 2.2.
  server_process server(server_arguments());
  http_connection c(server.endpoint());
  c.send("\r\n\r\nGET / HTTP/1.1\r\nHost: test\r\n\r\n");
  auto res = c.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello from coral\n");
  c.send("GET /sleep?ms=1 HTTP/1.1\r\nHost: test\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: test\r\n\r\n");
  BOOST_TEST(c.receive().body() == "slept 1 ms\n");
  res = c.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello from coral\n");
  c.send("\r\n");
  c.send("\n");
  res = c.get("/");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.keep_alive());
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(http_a_client_vanishing_mid_stream_costs_only_its_session) {
  server_process server(server_arguments());
  {
    http_connection c(server.endpoint());
    c.send("GET /stream?n=1000 HTTP/1.1\r\nHost: test\r\n\r\n");
    http::response_parser<http::string_body> parser;
    bool header = false;
    http::async_read_header(c.socket, c.buffer, parser, [&](boost::system::error_code e, std::size_t) {
      BOOST_REQUIRE_MESSAGE(!e, e.message());
      header = true;
    });
    run_until(header, "the stream's header");
    // Two sessions and the producer, which starts once the header's write has completed on the
    // server's side: possibly after this client has read the header.
    wait_for_stat(server.endpoint(), "tasks_alive", 3);
  }  // gone mid-stream
  // Its session and its producer end (the producer cancelled wherever it waited).
  wait_for_stat(server.endpoint(), "tasks_alive", 1);
  BOOST_TEST(server.interrupt() == 0);
}

namespace {

// A client of http_server that holds a session (a keep-alive request answered): as
// served_line_client.
std::unique_ptr<http_connection> served_http_client(const tcp::endpoint& server) {
  const auto deadline = clock_type::now() + patience;
  for (;;) {
    auto c = std::make_unique<http_connection>(server);
    const auto res = c->get("/");
    if (res.result_int() == 200) return c;
    BOOST_TEST_REQUIRE(res.result_int() == 503);
    BOOST_REQUIRE_MESSAGE(clock_type::now() < deadline, "a slot never came back");
  }
}

// The refusal of a connection past --max-connections, with the request it had sent.
void expect_over_capacity(const tcp::endpoint& server) {
  http_connection c(server);
  c.send("GET / HTTP/1.1\r\nHost: test\r\n\r\n");
  http::response_parser<http::string_body> parser;
  bool done = false;
  http::async_read(c.socket, c.buffer, parser, [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, "reading the refusal: " << e.message());
    done = true;
  });
  run_until(done, "the refusal");
  const auto res = parser.release();
  BOOST_TEST(res.result_int() == 503);
  BOOST_TEST(res.reason() == "Service Unavailable");
  BOOST_TEST(res[http::field::connection] == "close");
  BOOST_TEST(res[http::field::server] == "coral");
  BOOST_TEST(res.body() == "too many connections\n");
  const auto [rest, error] = rest_until_close(c);
  BOOST_TEST(rest.empty(), rest);
  BOOST_TEST((error == asio::error::eof), error.message());
}

}  // namespace

BOOST_AUTO_TEST_CASE(http_connections_past_the_cap_get_503_and_every_slot_comes_back) {
  server_process server(server_arguments({"--max-connections", "4", "--stream-interval-ms", "1"}));
  std::vector<std::unique_ptr<http_connection>> held;
  for (int i = 0; i < 4; ++i) held.push_back(served_http_client(server.endpoint()));
  expect_over_capacity(server.endpoint());
  // The sessions end in four ways: the client closes, resets, is refused (400), and vanishes in
  // the middle of a stream.
  held[0]->socket.close();
  held[1]->socket.set_option(asio::socket_base::linger(true, 0));
  held[1]->socket.close();
  held[2]->send("NOT HTTP\r\n\r\n");
  expect_refusal(*held[2], 400, "a bad request");
  held[3]->send("GET /stream?n=10000 HTTP/1.1\r\nHost: test\r\n\r\n");
  read_exactly(held[3]->socket, 100);
  held[3]->socket.set_option(asio::socket_base::linger(true, 0));
  held[3]->socket.close();
  held.clear();
  // Every slot comes back, and none twice: four are served again, a fifth is refused.
  for (int i = 0; i < 4; ++i) held.push_back(served_http_client(server.endpoint()));
  expect_over_capacity(server.endpoint());
  // Many clients at once, their sessions ending on every thread: never more than four served.
  held.clear();
  constexpr int n = 16;
  std::vector<std::unique_ptr<http_connection>> clients;
  for (int i = 0; i < n; ++i) clients.push_back(std::make_unique<http_connection>(server.endpoint()));
  const std::string request = "GET /sleep?ms=50 HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
  std::vector<http::response_parser<http::string_body>> parsers(n);
  int pending = 2 * n;
  bool done = false;
  for (int i = 0; i < n; ++i) {
    asio::async_write(clients[i]->socket, asio::buffer(request),
                      [&](boost::system::error_code, std::size_t) { done = --pending == 0; });
    http::async_read(clients[i]->socket, clients[i]->buffer, parsers[i], [&](boost::system::error_code e, std::size_t) {
      BOOST_REQUIRE_MESSAGE(!e, e.message());
      done = --pending == 0;
    });
  }
  run_until(done, "every answer");
  int served = 0, refused = 0;
  for (auto& p : parsers) {
    served += p.get().result_int() == 200;
    refused += p.get().result_int() == 503;
  }
  BOOST_TEST(served + refused == n);
  BOOST_TEST(served <= 4);  // (fewer if slots of the sessions just closed were not back yet)
  BOOST_TEST_MESSAGE(served << " of " << n << " served at once");
  clients.clear();
  for (int i = 0; i < 4; ++i) held.push_back(served_http_client(server.endpoint()));
  expect_over_capacity(server.endpoint());
  BOOST_TEST(server.interrupt() == 0, server.output());
}

BOOST_AUTO_TEST_CASE(http_echo_streams_the_body_back_as_it_is_read) {
  // The response begins before the request's body has all been sent: the server holds a piece of
  // the body at a time, never the whole of it.
  server_process server(server_arguments());
  http_connection c(server.endpoint());
  const std::string body = pattern(1 << 20, 3);
  c.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  c.send(body.substr(0, 100'000));
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(2 << 20);
  bool header = false;
  http::async_read_header(c.socket, c.buffer, parser, [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    header = true;
  });
  run_until(header, "the response's header, with most of the body unsent");
  BOOST_TEST(parser.get().result_int() == 200);
  BOOST_TEST(parser.get()[http::field::content_length] == std::to_string(body.size()));
  BOOST_TEST(parser.get()[http::field::content_type] == "application/octet-stream");
  // The rest, written while the echo is read.
  std::string echoed(c.buffer.size(), '\0');
  asio::buffer_copy(asio::buffer(echoed), c.buffer.data());
  c.buffer.consume(c.buffer.size());
  echoed += write_while_reading(c.socket, body.substr(100'000), c.socket, body.size() - echoed.size());
  BOOST_TEST((echoed == body));
  // A chunked body comes back chunked; the connection stays open.
  c.send(
      "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  auto res = c.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.chunked());
  BOOST_TEST(res.body() == "hello world");
  BOOST_TEST(res.keep_alive());
  // Other routes drop a body, a piece at a time, and read the next request after it.
  c.send("GET / HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n" + std::string(100'000, 'd') +
         "GET /stats HTTP/1.1\r\nHost: test\r\n\r\n");
  res = c.receive();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello from coral\n");
  BOOST_TEST(c.receive()[http::field::content_type] == "application/json");
  c.send(post("/", std::string(50'000, 'p')));
  res = c.receive();
  BOOST_TEST(res.result_int() == 405);
  BOOST_TEST(res[http::field::allow] == "GET, HEAD");
  BOOST_TEST(res.keep_alive());
  // A body that fails after a piece was echoed cuts the response short and closes: no last chunk.
  c.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  http::response_parser<http::string_body> cut;
  bool got_header = false;
  http::async_read_header(c.socket, c.buffer, cut, [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    got_header = true;
  });
  run_until(got_header, "the header of the echo");
  BOOST_TEST(cut.get().result_int() == 200);
  BOOST_TEST(cut.get().chunked());
  c.send("zz\r\n");  // not a chunk size
  const auto [rest, error] = rest_until_close(c);
  BOOST_TEST(rest.find("hello") != std::string::npos, rest);
  BOOST_TEST(rest.find("0\r\n\r\n") == std::string::npos, rest);
  BOOST_TEST((error == asio::error::eof || error == asio::error::connection_reset), error.message());
  // A body that fails in its first piece is refused as before.
  http_connection bad(server.endpoint());
  bad.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  expect_refusal(bad, 400, "a malformed first chunk");
  BOOST_TEST(server.interrupt() == 0, server.output());
}

BOOST_AUTO_TEST_CASE(http_a_stream_without_write_progress_is_ended) {
  {
    // Progress, not total time: a stream that lasts 500 ms under a 50 ms write timeout, to a
    // client that reads.
    server_process server(server_arguments({"--write-timeout-ms", "50"}));
    http_connection c(server.endpoint());
    const auto res = c.get("/stream?n=5");
    BOOST_TEST(res.result_int() == 200);
    BOOST_TEST(res.body() == "chunk 0\nchunk 1\nchunk 2\nchunk 3\nchunk 4\n");
    BOOST_TEST(server.interrupt() == 0, server.output());
  }
  // A client that asks for streams (1.6 GB: more than every buffer on the way holds) and reads
  // nothing.
  server_process server(server_arguments({"--write-timeout-ms", "300", "--stream-interval-ms", "0"}));
  auto client = connect_to(server.endpoint(), 4096);
  std::string requests;
  for (int i = 0; i < 10; ++i) requests += "GET /stream?n=10000&size=16384 HTTP/1.1\r\nHost: test\r\n\r\n";
  write_all(client, requests);
  // Its session and the stream's producer end; then it reads what had been sent, and the close.
  wait_for_stat(server.endpoint(), "tasks_alive", 1);
  std::string received;
  boost::system::error_code error;
  bool done = false;
  asio::async_read(client, asio::dynamic_buffer(received), [&](boost::system::error_code e, std::size_t) {
    error = e;
    done = true;
  });
  run_until(done, "the rest and the close");
  BOOST_TEST((error == asio::error::eof || error == asio::error::connection_reset), error.message());
  BOOST_TEST(received.starts_with("HTTP/1.1 200 OK\r\n"));
  BOOST_TEST(!received.ends_with("\r\n0\r\n\r\n"), "the last stream was cut short");
  BOOST_TEST(server.interrupt() == 0, server.output());
}

// Run with CORAL_TASK_TRACKING=1, the server lists what each of its tasks does at /debug/tasks (and
// as JSON), and prints the same on stderr on SIGUSR1, going on afterwards.
BOOST_AUTO_TEST_CASE(http_debug_tasks_shows_where_each_task_waits) {
  ::setenv("CORAL_TASK_TRACKING", "1", 1);
  server_process server(server_arguments({"--grace-ms", "100", "--debug-port", "0"}));
  ::unsetenv("CORAL_TASK_TRACKING");
  http_connection sleeping(server.endpoint());
  sleeping.send("GET /sleep?ms=60000 HTTP/1.1\r\nHost: test\r\n\r\n");
  http_connection c(debug_endpoint(server));
  const auto deadline = clock_type::now() + patience;
  http_response json;
  do {
    json = c.get("/debug/tasks.json");
  } while (json.body().find("\"waits_on\":\"sleep\"") == std::string::npos && clock_type::now() < deadline);
  BOOST_TEST(json.result_int() == 200);
  BOOST_TEST(json[http::field::content_type] == "application/json");
  BOOST_TEST(json.body().rfind("{\"schema\":1,\"compiled_in\":true,\"tracking\":true,\"total\":", 0) == 0, json.body());
  BOOST_TEST(json.body().find("\"waits_on\":\"sleep\"") != std::string::npos, json.body());
  const auto text = c.get("/debug/tasks");
  BOOST_TEST(text.result_int() == 200);
  BOOST_TEST(text[http::field::content_type] == "text/plain");
  // The sleeping request's session, named after its connection, at the sleep in answer().
  BOOST_TEST(text.body().find("\"http 127.0.0.1:") != std::string::npos, text.body());
  BOOST_TEST(text.body().find("on sleep (due in") != std::string::npos, text.body());
  BOOST_TEST(text.body().find("http_session.hpp:") != std::string::npos, text.body());
  // This request's own session is running while it answers.
  BOOST_TEST(text.body().find(": running for") != std::string::npos, text.body());
  // At most ?limit=N tasks (100 unless given), and how many there are, always.
  const auto total = text.body().substr(7, text.body().find(' ', 7) - 7);
  BOOST_TEST(std::stoi(total) >= 4, text.body());  // the accept loops, the sessions, ...
  const auto one = c.get("/debug/tasks?limit=1");
  BOOST_TEST(one.body().find(" tasks, the first 1 listed\n") != std::string::npos, one.body());
  BOOST_TEST(occurrences(one.body(), "\ntask ") == 1, one.body());
  const auto none = c.get("/debug/tasks.json?limit=0");
  BOOST_TEST(none.body().find("\"tasks\":[]}") != std::string::npos, none.body());
  BOOST_TEST(none.body().find("\"total\":0,") == std::string::npos, none.body());
  const auto two = c.get("/debug/tasks.json?limit=2");
  BOOST_TEST(occurrences(two.body(), "{\"id\":") == 2, two.body());
  for (const std::string bad : {"x", "-1", "1001", ""}) {
    BOOST_TEST(c.get("/debug/tasks?limit=" + bad).result_int() == 400, bad);
  }
  server.signal(SIGUSR1);
  server.wait_for_output("on sleep (due in");
  BOOST_TEST(http_connection(server.endpoint()).get("/").result_int() == 200);  // still serving
  BOOST_TEST(server.interrupt() == 0);  // the sleep is cancelled after the grace period
}

BOOST_AUTO_TEST_CASE(http_graceful_shutdown_finishes_requests_in_flight) {
  server_process server(server_arguments());
  http_connection busy(server.endpoint());
  http_connection idle(server.endpoint());
  BOOST_TEST(idle.get("/").result_int() == 200);
  busy.send("GET /sleep?ms=1000 HTTP/1.1\r\nHost: test\r\n\r\n");
  wait_for_stat(server.endpoint(), "requests_in_flight", 1);
  server.signal(SIGTERM);
  BOOST_TEST((wait_for_close(idle.socket) == asio::error::eof));  // idle: ended at once
  const auto res = busy.receive();                                // in flight: answered
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "slept 1000 ms\n");
  BOOST_TEST(!res.keep_alive());  // (no next request would be read)
  BOOST_TEST((wait_for_close(busy.socket) == asio::error::eof));
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("grace period over") == std::string::npos, server.output());
}

BOOST_AUTO_TEST_CASE(http_grace_period_over_cancels_what_is_left) {
  server_process server(server_arguments({"--grace-ms", "200"}));
  http_connection busy(server.endpoint());
  busy.send("GET /sleep?ms=60000 HTTP/1.1\r\nHost: test\r\n\r\n");
  wait_for_stat(server.endpoint(), "requests_in_flight", 1);
  server.signal(SIGTERM);
  const auto closed = wait_for_close(busy.socket);
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("grace period over") != std::string::npos, server.output());
}

BOOST_AUTO_TEST_CASE(http_1000_concurrent_sleeps) {
  rlimit files{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &files) == 0);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  server_process server(server_arguments());
  constexpr int n = 1000;
  std::vector<std::unique_ptr<http_connection>> clients;
  for (int i = 0; i < n; ++i) clients.push_back(std::make_unique<http_connection>(server.endpoint()));
  const auto start = clock_type::now();
  const std::string request = "GET /sleep?ms=1000 HTTP/1.1\r\nHost: test\r\n\r\n";
  std::vector<http_response> responses(n);
  std::vector<http::response_parser<http::string_body>> parsers(n);
  int pending = 2 * n;
  bool done = false;
  for (int i = 0; i < n; ++i) {
    asio::async_write(clients[i]->socket, asio::buffer(request), [&](boost::system::error_code e, std::size_t) {
      BOOST_REQUIRE_MESSAGE(!e, e.message());
      done = --pending == 0;
    });
    http::async_read(clients[i]->socket, clients[i]->buffer, parsers[i], [&](boost::system::error_code e, std::size_t) {
      BOOST_REQUIRE_MESSAGE(!e, e.message());
      done = --pending == 0;
    });
  }
  run_until(done, "1000 sleeps");
  int ok = 0;
  for (auto& p : parsers) ok += p.get().body() == "slept 1000 ms\n";
  BOOST_TEST(ok == n);
  BOOST_TEST_MESSAGE(
      "1000 concurrent /sleep?ms=1000: " << std::chrono::duration<double>(clock_type::now() - start).count() << " s");
  BOOST_TEST(server.interrupt() == 0);
}

BOOST_AUTO_TEST_CASE(running_out_of_descriptors_is_said_once_per_burst) {
  server_process server(server_arguments());
  // The server may open two more descriptors: two sessions. (The limit bounds the descriptors'
  // numbers, and a new one takes the lowest number free.)
  std::set<int> taken;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(server.pid()) + "/fd")) {
    taken.insert(std::stoi(entry.path().filename().string()));
  }
  int free_numbers = 0, limit_number = 0;
  for (; free_numbers < 2; ++limit_number) free_numbers += taken.count(limit_number) == 0;
  const rlimit limit{static_cast<rlim_t>(limit_number), static_cast<rlim_t>(limit_number)};
  BOOST_REQUIRE(::prlimit(server.pid(), RLIMIT_NOFILE, &limit, nullptr) == 0);
  http_connection first(server.endpoint()), second(server.endpoint());
  BOOST_TEST(first.get("/").result_int() == 200);
  BOOST_TEST(second.get("/").result_int() == 200);
  http_connection third(server.endpoint());  // (in the backlog: the server cannot accept it)
  server.wait_for_output("accept: ");
  // A second of failed accepts, retried every 100 ms, then a descriptor is free again.
  BOOST_TEST(first.get("/sleep?ms=1000").result_int() == 200);
  first.socket.close();
  BOOST_TEST(third.get("/").result_int() == 200);
  server.wait_for_output("accepting again after ");
  BOOST_TEST(server.interrupt() == 0);
  const auto& said = server.output();
  const auto burst = said.find("accept: Too many open files");
  BOOST_REQUIRE_MESSAGE(burst != std::string::npos, said);
  BOOST_TEST(said.find("accept: ", burst + 1) == said.find("accept: accepting again after "), said);  // once
  const auto count = said.substr(said.find("accepting again after ") + 22);
  BOOST_TEST(std::stol(count) >= 2, said);  // (every attempt counted)
}

// A supervisor that stops a server as soon as it has announced its port gets the graceful
// shutdown, not a process killed by the signal.
BOOST_AUTO_TEST_CASE(a_signal_right_after_listening_is_a_graceful_shutdown) {
  server_process server(server_arguments());
  BOOST_TEST(server.interrupt() == 0);
  server_process again(server_arguments());
  again.signal(SIGTERM);
  BOOST_TEST(again.exit_status() == 0);
}

// A supervisor that sends SIGTERM again and again until the server has gone: the first begins
// the graceful shutdown, the others change nothing (also while the server is exiting).
BOOST_AUTO_TEST_CASE(a_signal_repeated_until_the_server_exits_is_one_graceful_shutdown) {
  server_process server(server_arguments({"--grace-ms", "50"}));
  server.signal_until_exit(SIGTERM);
  BOOST_TEST(server.exit_status() == 0);
}

BOOST_AUTO_TEST_CASE(existing_server_with_coral_added) {
  server_process server({"--port", "0"});
  auto a = connect_to(server.endpoint());
  auto b = connect_to(server.endpoint());
  std::string a_in, b_in;
  write_all(a, "7\n");
  write_all(b, "a 8\n");
  BOOST_TEST(read_line(a, a_in) == "49\n");
  BOOST_TEST(read_line(b, b_in) == "64 (via asio::awaitable)\n");
  // A client that leaves with answers on their way costs nothing else.
  write_all(a, "3\n4\n5\n");
  a.close();
  write_all(b, "12\n");
  BOOST_TEST(read_line(b, b_in) == "144\n");
  write_all(b, "2\n");  // in progress when the server stops
  BOOST_TEST(server.interrupt() == 0);
}
