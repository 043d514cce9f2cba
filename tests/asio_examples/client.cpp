// The client that drives each ported example, as a user would with nc: it starts the server
// program on a free port, talks to it over TCP, stops it with SIGINT with connections still open
// and checks that it exits with status 0. Usage (from CTest):
//   asio_examples_client --run_test=<scenario> -- <server program> [server arguments...]
// Every wait is bounded (patience); the client never sleeps to let the server get somewhere.
#define BOOST_TEST_MODULE coral ports of the Asio examples
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto patience = 30s;

asio::io_context io;

// Runs the client's io_context until `done` or the patience runs out.
void run_until(const bool& done, const char* what) {
  const auto deadline = clock_type::now() + patience;
  io.restart();
  while (!done && clock_type::now() < deadline) io.run_one_until(deadline);
  if (!done) throw std::runtime_error(std::string("timed out waiting for ") + what);
}

// The server under test: started with its arguments and "0" as its port; its output is collected
// until it exits.
class server_process {
 public:
  explicit server_process(std::vector<std::string> extra_arguments = {}) {
    auto& suite = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(suite.argc >= 2, "usage: asio_examples_client --run_test=<scenario> -- <server program>");
    std::vector<std::string> arguments{suite.argv[1], "0"};
    arguments.insert(arguments.end(), extra_arguments.begin(), extra_arguments.end());
    int out[2];
    BOOST_REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    pid_ = ::fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      std::vector<char*> argv;
      for (auto& a : arguments) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    output_.emplace(io, out[0]);
    bool have_port = false;
    asio::async_read_until(*output_, asio::dynamic_buffer(text_), '\n',
                           [&](boost::system::error_code, std::size_t) { have_port = true; });
    run_until(have_port, "the server's port");
    BOOST_REQUIRE_MESSAGE(text_.rfind("listening on ", 0) == 0, "the server said: " << text_);
    port_ = static_cast<unsigned short>(std::stoi(text_.substr(13)));
    collect();
  }

  ~server_process() {
    if (pid_ > 0) {  // a failed test: do not leave the server running
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  tcp::endpoint endpoint() const { return {asio::ip::address_v4::loopback(), port_}; }

  // SIGINT, as Ctrl-C; returns the exit status once the server's output has ended.
  int interrupt() {
    ::kill(pid_, SIGINT);
    run_until(ended_, "the server to exit");
    int status = 0;
    BOOST_REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    BOOST_TEST_MESSAGE("server output:\n" << text_);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  const std::string& output() const { return text_; }

 private:
  void collect() {
    output_->async_read_some(asio::buffer(chunk_), [this](boost::system::error_code e, std::size_t n) {
      text_.append(chunk_, n);
      if (e) {
        ended_ = true;
      } else {
        collect();
      }
    });
  }

  pid_t pid_ = -1;
  unsigned short port_ = 0;
  std::optional<asio::posix::stream_descriptor> output_;
  std::string text_;
  char chunk_[4096];
  bool ended_ = false;
};

tcp::socket connect_to(const tcp::endpoint& endpoint) {
  tcp::socket socket(io);
  bool done = false;
  boost::system::error_code error;
  socket.async_connect(endpoint, [&](boost::system::error_code e) {
    error = e;
    done = true;
  });
  run_until(done, "connect");
  BOOST_REQUIRE_MESSAGE(!error, "connect: " << error.message());
  return socket;
}

void write_all(tcp::socket& socket, const std::string& data) {
  bool done = false;
  asio::async_write(socket, asio::buffer(data), [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, "write: " << e.message());
    done = true;
  });
  run_until(done, "write");
}

std::string read_exactly(tcp::socket& socket, std::size_t n) {
  std::string data(n, '\0');
  bool done = false;
  asio::async_read(socket, asio::buffer(data), [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, "read: " << e.message());
    done = true;
  });
  run_until(done, "read");
  return data;
}

std::string read_line(tcp::socket& socket, std::string& buffered) {
  bool done = false;
  asio::async_read_until(socket, asio::dynamic_buffer(buffered), '\n', [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, "read line: " << e.message());
    done = true;
  });
  run_until(done, "a line");
  const auto end = buffered.find('\n') + 1;
  std::string line = buffered.substr(0, end);
  buffered.erase(0, end);
  return line;
}

// The error that ends the connection from the server's side (eof or reset), after any data.
boost::system::error_code wait_for_close(tcp::socket& socket) {
  char sink[256];
  boost::system::error_code error;
  bool done = false;
  std::function<void()> next = [&] {
    socket.async_read_some(asio::buffer(sink), [&](boost::system::error_code e, std::size_t) {
      if (e) {
        error = e;
        done = true;
      } else {
        next();
      }
    });
  };
  next();
  run_until(done, "the server to close the connection");
  return error;
}

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(echo) {
  server_process server;
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
  server_process server;
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
  server_process server({std::to_string(idle.count())});
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
  server_process server({std::to_string(target_acceptor.local_endpoint().port()), std::to_string(bytes_per_token),
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
  std::string received(size, '\0');
  int pending = 2;
  bool done = false;
  auto one_done = [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    done = --pending == 0;
  };
  asio::async_write(client, asio::buffer(upstream), one_done);
  asio::async_read(target, asio::buffer(received), one_done);
  run_until(done, "the data through the proxy");
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
