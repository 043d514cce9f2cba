#pragma once

// A server program under test and a client's blocking-with-a-deadline socket helpers, for tests
// that drive a demo or example server as a user would (nc, curl): start it on a free port, talk
// to it, signal it, check its exit status. Every wait is bounded by `patience`.

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
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace server_test {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

inline constexpr auto patience = 30s;

inline asio::io_context io;

// Runs the client's io_context until `done` or the patience runs out.
inline void run_until(const bool& done, const char* what) {
  const auto deadline = clock_type::now() + patience;
  io.restart();
  while (!done && clock_type::now() < deadline) io.run_one_until(deadline);
  if (!done) throw std::runtime_error(std::string("timed out waiting for ") + what);
}

// Starts a program (`arguments`, the program's path first) with the descriptors `captured` (its
// standard output, error, or both) going into one pipe: its pid and the pipe's reading end.
inline std::pair<pid_t, int> start_program(std::vector<std::string> arguments, std::initializer_list<int> captured) {
  int pipe[2];
  BOOST_REQUIRE(::pipe2(pipe, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    for (int fd : captured) ::dup2(pipe[1], fd);
    std::vector<char*> argv;
    for (auto& a : arguments) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe[1]);
  return {pid, pipe[0]};
}

// The server under test: the program named after `--` on the test's command line, started with
// `arguments` (which ask for a free port); it prints "listening on <port>" first. Its output (standard
// output and error) is collected until it exits.
class server_process {
 public:
  explicit server_process(std::vector<std::string> arguments) {
    auto& suite = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(suite.argc >= 2, "usage: <test> --run_test=<scenario> -- <server program>");
    arguments.insert(arguments.begin(), suite.argv[1]);
    const auto [pid, output] = start_program(std::move(arguments), {STDOUT_FILENO, STDERR_FILENO});
    pid_ = pid;
    output_.emplace(io, output);
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
  pid_t pid() const { return pid_; }

  // Waits until the server has printed `text`.
  void wait_for_output(const std::string& text) {
    const auto deadline = clock_type::now() + patience;
    io.restart();
    while (text_.find(text) == std::string::npos && !ended_ && clock_type::now() < deadline) io.run_one_until(deadline);
    BOOST_REQUIRE_MESSAGE(text_.find(text) != std::string::npos, "the server did not print \"" << text << "\":\n"
                                                                                               << text_);
  }

  // Signals the server (SIGINT: Ctrl-C).
  void signal(int number = SIGINT) { ::kill(pid_, number); }

  // Signals the server every millisecond until it has exited (a supervisor that insists).
  void signal_until_exit(int number) {
    const auto deadline = clock_type::now() + patience;
    io.restart();
    while (!ended_ && clock_type::now() < deadline) {
      ::kill(pid_, number);
      io.run_one_for(1ms);
    }
  }

  // Waits for the server to exit; its exit status (128 + the signal if a signal ended it).
  int exit_status() {
    run_until(ended_, "the server to exit");
    int status = 0;
    BOOST_REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    BOOST_TEST_MESSAGE("server output:\n" << text_);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // SIGINT, as Ctrl-C, and the exit status.
  int interrupt() {
    signal(SIGINT);
    return exit_status();
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

// Runs one asynchronous operation of a client to its end: its error and size.
template <class Initiate>
std::pair<boost::system::error_code, std::size_t> complete(Initiate initiate, const char* what) {
  boost::system::error_code error;
  std::size_t size = 0;
  bool done = false;
  initiate([&](boost::system::error_code e, std::size_t n = 0) {
    error = e;
    size = n;
    done = true;
  });
  run_until(done, what);
  return {error, size};
}

// The arguments of the server under test: a free port, `before`, what the test's command line
// gives after the program (threads, say), and `more`.
inline std::vector<std::string> server_arguments(std::vector<std::string> more = {},
                                                 std::vector<std::string> before = {}) {
  std::vector<std::string> all{"--port", "0"};
  all.insert(all.end(), before.begin(), before.end());
  auto& suite = boost::unit_test::framework::master_test_suite();
  for (int i = 2; i < suite.argc; ++i) all.emplace_back(suite.argv[i]);
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

// A client socket connecting to `endpoint`: connected, or with the connect's failure in `error`.
// `receive_buffer`: the client's socket receive buffer, if given (a small one makes a client that
// does not read stall the server's writes soon).
inline tcp::socket try_connect(const tcp::endpoint& endpoint, boost::system::error_code& error,
                               std::optional<int> receive_buffer = std::nullopt) {
  tcp::socket socket(io, endpoint.protocol());
  if (receive_buffer) socket.set_option(asio::socket_base::receive_buffer_size(*receive_buffer));
  bool done = false;
  socket.async_connect(endpoint, [&](boost::system::error_code e) {
    error = e;
    done = true;
  });
  run_until(done, "connect");
  return socket;
}

inline tcp::socket connect_to(const tcp::endpoint& endpoint, std::optional<int> receive_buffer = std::nullopt) {
  boost::system::error_code error;
  tcp::socket socket = try_connect(endpoint, error, receive_buffer);
  BOOST_REQUIRE_MESSAGE(!error, "connect: " << error.message());
  return socket;
}

inline void write_all(tcp::socket& socket, const std::string& data) {
  bool done = false;
  asio::async_write(socket, asio::buffer(data), [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, "write: " << e.message());
    done = true;
  });
  run_until(done, "write");
}

inline std::string read_exactly(tcp::socket& socket, std::size_t n) {
  std::string data(n, '\0');
  bool done = false;
  asio::async_read(socket, asio::buffer(data), [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, "read: " << e.message());
    done = true;
  });
  run_until(done, "read");
  return data;
}

inline std::string read_line(tcp::socket& socket, std::string& buffered) {
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

// Writes `data` to `to` while reading `n` bytes from `from` (the same socket, for an echo); what
// was read.
inline std::string write_while_reading(tcp::socket& to, const std::string& data, tcp::socket& from, std::size_t n) {
  std::string received(n, '\0');
  int pending = 2;
  bool done = false;
  auto one_done = [&](boost::system::error_code e, std::size_t) {
    BOOST_REQUIRE_MESSAGE(!e, e.message());
    done = --pending == 0;
  };
  asio::async_write(to, asio::buffer(data), one_done);
  asio::async_read(from, asio::buffer(received), one_done);
  run_until(done, "the exchange");
  return received;
}

// The error that ends the connection from the server's side (eof or reset), after any data.
inline boost::system::error_code wait_for_close(tcp::socket& socket) {
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

// Runs `command` with sh to its end: what it printed (standard output and error) and its exit
// status (128 + the signal if a signal ended it).
inline std::pair<std::string, int> run_command(const std::string& command) {
  FILE* out = ::popen((command + " 2>&1 </dev/null").c_str(), "r");
  BOOST_REQUIRE(out != nullptr);
  std::string said;
  char chunk[512];
  while (const std::size_t n = std::fread(chunk, 1, sizeof chunk, out)) said.append(chunk, n);
  const int status = ::pclose(out);
  return {said, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

inline std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return s;
}

}  // namespace server_test
