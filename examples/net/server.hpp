#pragma once

// What the network demos share: command-line options, the io_context and its threads, and the
// two-phase graceful shutdown on SIGINT / SIGTERM:
//   1. stop accepting; `stopping` is set: sessions end at their next idle wait (a session answering
//      a request finishes it first);
//   2. after the grace period, the sessions still running are cancelled (their waits throw
//      operation_aborted, wherever they are);
// then every task has ended and the program exits with status 0.
// Each connection's task runs on a strand of its own: coral gives every task spawned on a
// multi-threaded io_context one, so a session's code never runs on two threads at once.

#include <sys/resource.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace net_demo {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

struct options {
  unsigned short port = 55555;
  unsigned threads = 1;
  std::chrono::milliseconds idle_timeout = 30s;
  std::chrono::milliseconds grace = 5s;
};

// --port N (0: any free port, printed), --threads N, --idle-timeout-ms N, --grace-ms N.
inline options parse_options(int argc, char* argv[], const char* usage) {
  options o;
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "%s\nusage: %s %s\n", why.c_str(), argv[0], usage);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (i + 1 == argc) fail("missing value after " + std::string(name));
    char* end = nullptr;
    const unsigned long value = std::strtoul(argv[++i], &end, 10);
    if (*end != '\0') fail("not a number: " + std::string(argv[i]));
    if (name == "--port" && value <= 65535) {
      o.port = static_cast<unsigned short>(value);
    } else if (name == "--threads" && value >= 1 && value <= 256) {
      o.threads = static_cast<unsigned>(value);
    } else if (name == "--idle-timeout-ms") {
      o.idle_timeout = std::chrono::milliseconds(value);
    } else if (name == "--grace-ms") {
      o.grace = std::chrono::milliseconds(value);
    } else {
      fail("bad option: " + std::string(name) + " " + argv[i]);
    }
  }
  return o;
}

// A task that ends when phase 1 of the shutdown begins: raced against a session's idle waits.
inline coral::task<> until_set(coral::event& e) {
  co_await e.wait();
}

// Whether the client has sent bytes not read yet: a session that has them is not idle.
// (Socket: a stream socket of any protocol, TCP for the servers, a socket pair for a fuzz target.)
template <class Socket>
bool arrived(Socket& socket) {
  boost::system::error_code error;
  return socket.available(error) > 0;  // (an error shows in the read that follows)
}

// Until the client has sent something. Peeking, not reading: a wait that loses its race to the
// shutdown has taken no bytes from the client. (Not async_wait(wait_read): that one re-arms the
// descriptor in epoll with a system call each time, where a receive after a read that emptied the
// socket just waits.)
template <class Socket>
coral::task<> readable(Socket& socket) {
  char first;
  co_await socket.async_receive(asio::buffer(&first, 1), Socket::message_peek, coral::use_task);
}

// Writes all of `buffers` (a task, so that it can be given a time-out).
template <class Socket, class Buffers>
coral::task<> write_all(Socket& socket, Buffers buffers) {
  co_await asio::async_write(socket, buffers, coral::use_task);
}

// True when the client has sent something, false when the shutdown began.
template <class Socket>
coral::task<bool> client_or_shutdown(Socket& socket, coral::event& stopping) {
  auto woke = co_await coral::when_any(readable(socket), until_set(stopping));
  co_return woke.index() == 0;
}

// A session's idle wait, the one place where the first phase of a shutdown ends it: true when the
// client has sent something, false when the shutdown began; throws coral::timeout_error after
// `limit`. (The time-out is around the race, not inside it: then it uses the session's own
// deadline watch, which stays armed from one idle wait to the next.)
template <class Socket>
coral::task<bool> wait_for_client(Socket& socket, coral::event& stopping, std::chrono::milliseconds limit) {
  if (arrived(socket)) co_return true;  // (skips the race, and a round trip through epoll)
  co_return co_await coral::with_timeout(limit, client_or_shutdown(socket, stopping));
}

// Whether an accept failed for want of resources (descriptors, memory), which only time frees.
inline bool out_of_resources(const boost::system::error_code& e) {
  namespace errc = boost::system::errc;
  return e == errc::too_many_files_open || e == errc::too_many_files_open_in_system || e == errc::no_buffer_space ||
         e == errc::not_enough_memory;
}

// The server's life: accepts, with `session(socket)` returning each connection's task (spawned
// into the session group), until a signal (`signals`, set up before the port is announced);
// then the two phases above.
template <class Session>
coral::task<> serve(tcp::acceptor& acceptor, asio::signal_set& signals, const options& o, coral::event& stopping,
                    Session session) {
  auto executor = co_await coral::this_task::executor;
  coral::task_group sessions(executor);
  auto accept_loop = [&]() -> coral::task<> {
    long failed = 0;  // accepts that failed for want of resources, since the last that did not
    for (;;) {
      auto [error, socket] = co_await acceptor.async_accept(asio::as_tuple(coral::use_task));
      if (error == asio::error::operation_aborted) throw boost::system::system_error(error);
      // Out of descriptors, the pending connection stays in the backlog and the next accept fails
      // at once: wait for sessions to end instead of spinning. Said once per burst.
      if (out_of_resources(error)) {
        if (failed++ == 0) {
          std::fprintf(stderr, "accept: %s; retrying every 100 ms\n", error.message().c_str());
        }
        co_await coral::sleep_for(100ms);
        continue;
      }
      if (failed > 0 && !error) {
        std::fprintf(stderr, "accept: accepting again after %ld failed attempts\n", failed);
        failed = 0;
      }
      if (error) continue;  // (a connection reset before it was accepted)
      sessions.spawn([&session, s = std::move(socket)]() mutable { return session(std::move(s)); });
    }
  };
  auto signal = [&]() -> coral::task<int> { co_return co_await signals.async_wait(coral::use_task); };
  const auto got = co_await coral::when_any(accept_loop(), signal());
  std::printf("signal %d: shutting down, %zu sessions\n", std::get<1>(got), sessions.size());
  std::fflush(stdout);

  acceptor.close();
  stopping.set();
  // Phase 2 is with_timeout's: when the grace period is over, it cancels the join, which cancels
  // the sessions, and waits for them.
  auto join = [&]() -> coral::task<> { co_await sessions.join(); };
  bool finished = true;
  try {
    co_await coral::with_timeout(o.grace, join());
  } catch (const coral::timeout_error&) {
    finished = false;
  }
  if (!finished) {
    // (The timeout cancelled the join, and with it the sessions, and awaited them.)
    std::printf("grace period over: the remaining sessions were cancelled\n");
  }
  std::printf("all sessions ended\n");
  std::fflush(stdout);
}

// Runs `server(acceptor, signals)` (a task) on an io_context run by o.threads threads; returns the
// exit status. SIGINT and SIGTERM are caught from before the port is announced: a supervisor that
// stops the server as soon as it listens gets the graceful shutdown too.
template <class Server>
int run(const options& o, Server server) {
  // A connection is a descriptor: allow as many as the system lets this process have.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  try {
    asio::io_context io(static_cast<int>(o.threads));
    tcp::acceptor acceptor(io, {tcp::v4(), o.port});
    asio::signal_set signals(io, SIGINT, SIGTERM);
    std::printf("listening on %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
    std::fflush(stdout);
    auto job = coral::spawn(io.get_executor(), server(acceptor, signals));
    std::vector<std::jthread> threads;
    for (unsigned i = 1; i < o.threads; ++i) threads.emplace_back([&io] { io.run(); });
    io.run();
    threads.clear();
    job.get_result();  // rethrows what ended the server, if anything did
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace net_demo
