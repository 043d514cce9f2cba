#pragma once

// What the network demos share: command-line options, the io_context and its threads, and the
// two-phase graceful shutdown on SIGINT / SIGTERM:
//   1. stop accepting; `stopping` is set: sessions end at their next idle wait (a session answering
//      a request finishes it first);
//   2. after the grace period, the sessions still running are cancelled (their waits throw
//      operation_aborted, wherever they are);
// then every task has ended and the program exits with status 0.
// Two ways to use more than one thread:
//   --threads N: one io_context run by N threads. Each connection's task runs on a strand of its
//     own (coral gives every task spawned on a multi-threaded io_context one), so a session's code
//     never runs on two threads at once, but any thread may run it.
//   --io-pool N: a coral::io_pool, N io_contexts each run by one thread. The acceptor hands each
//     connection to the next context, where its session lives until it ends: no strands, and no
//     thread wakes another on a connection's way (docs/tasks.md compares the two, with numbers).
// Where: --bind ADDRESS (IPv4 or IPv6), 127.0.0.1 unless given: a demo is reachable from this
// machine only until it is told otherwise (--bind 0.0.0.0, or :: for IPv6 and IPv4). A private
// listener (http_server's debug routes) is always on 127.0.0.1.
// At most --max-connections sessions at once (the private listener's count too): a connection
// over it gets the server's refusal (an HTTP 503, a line) and is closed, and holds nothing after a
// short linger.

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <cctype>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace net_demo {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// A TLS stream over a socket (beast::ssl_stream, tls.hpp). A session is written once for a plain
// socket and for one of these: they differ in how a session waits for its client and how it
// closes (wait_for_client, end_gracefully). Options, time-outs and I/O on the socket itself go to
// the socket under the stream (beast::get_lowest_layer: the socket itself when it is plain).
template <class Stream>
concept tls_stream = requires(Stream& s) {
  s.next_layer();
  s.native_handle();
};

// Whether a read on a Stream failed because the connection ended without the client saying so: a
// TLS stream's end without the client's close_notify (tls.hpp says which error that is). A plain
// socket has no such end.
template <class Stream>
struct stream_end {
  static bool truncated(const boost::system::error_code&) noexcept { return false; }
};

// Whether a read on a Stream failed because the client ended the connection, said or not.
template <class Stream>
bool ended_by_client(const boost::system::error_code& error) noexcept {
  return error == asio::error::eof || stream_end<Stream>::truncated(error);
}

// ASCII case-insensitive equality. (Not beast::iequals: Beast 1.81's reads one byte past the end of
// both strings when they differ in case.)
inline bool equal_ignoring_case(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

struct options {
  asio::ip::address bind = asio::ip::address_v4::loopback();
  unsigned short port = 55555;
  unsigned threads = 1;
  unsigned io_pool = 0;      // 0: one io_context (run by `threads` threads)
  bool reuse_port = false;   // with io_pool: an acceptor per context on the port (SO_REUSEPORT)
  bool pin_threads = false;  // with io_pool: each thread on a CPU of its own
  std::chrono::milliseconds idle_timeout = 30s;
  std::chrono::milliseconds grace = 5s;
  std::size_t max_connections = 10'000;  // sessions at once; past it a connection is refused
};

// --bind ADDRESS, --port N (0: any free port, printed), --threads N | --io-pool N [--reuse-port 1]
// [--pin-threads 1], --idle-timeout-ms N, --grace-ms N, --max-connections N.
inline options parse_options(int argc, char* argv[], const char* usage) {
  options o;
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "%s\nusage: %s [--bind ADDRESS] %s\n", why.c_str(), argv[0], usage);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (i + 1 == argc) fail("missing value after " + std::string(name));
    if (name == "--bind") {
      boost::system::error_code error;
      o.bind = asio::ip::make_address(argv[++i], error);
      if (error) fail("--bind: not an IPv4 or IPv6 address: " + std::string(argv[i]));
      continue;
    }
    char* end = nullptr;
    const unsigned long value = std::strtoul(argv[++i], &end, 10);
    if (*end != '\0') fail("not a number: " + std::string(argv[i]));
    if (name == "--port" && value <= 65535) {
      o.port = static_cast<unsigned short>(value);
    } else if (name == "--threads" && value >= 1 && value <= 256) {
      o.threads = static_cast<unsigned>(value);
    } else if (name == "--io-pool" && value >= 1 && value <= 256) {
      o.io_pool = static_cast<unsigned>(value);
    } else if (name == "--reuse-port" && value <= 1) {
      o.reuse_port = value == 1;
    } else if (name == "--pin-threads" && value <= 1) {
      o.pin_threads = value == 1;
    } else if (name == "--idle-timeout-ms") {
      o.idle_timeout = std::chrono::milliseconds(value);
    } else if (name == "--grace-ms") {
      o.grace = std::chrono::milliseconds(value);
    } else if (name == "--max-connections" && value >= 1 && value <= 10'000'000) {
      o.max_connections = value;
    } else {
      fail("bad option: " + std::string(name) + " " + argv[i]);
    }
  }
  if (o.io_pool > 0 && o.threads > 1) fail("--threads and --io-pool are two ways to run threads: give one");
  if ((o.reuse_port || o.pin_threads) && o.io_pool == 0) fail("--reuse-port and --pin-threads are for --io-pool");
  return o;
}

// A task that ends when `e` is set: raced against a session's waits.
inline coral::task<> until_set(coral::event& e) {
  co_await e.wait();
}

// Phase 1 of the shutdown as the sessions see it: set() once, and every session idle between
// requests (in wait_for_client) ends its wait. An idle wait is a plain peeking receive, which
// set() cancels through the session's own executor: racing each idle wait against an event
// would cost every request a join (about 8 % of a request's time on the pool).
class shutdown_signal {
  struct entry;

 public:
  // A session's registration, for its whole life: made on the session's executor, which runs
  // one thing at a time (a strand on a shared io_context) and is where set() cancels its wait.
  class session {
   public:
    template <class Stream>
    session(shutdown_signal& signal, Stream& stream, asio::any_io_executor own)
        : signal_(signal), entry_(entry_for(boost::beast::get_lowest_layer(stream), std::move(own))) {
      signal_.link(entry_);
      // A session that starts after set() has collected the sessions it wakes (a TLS handshake
      // can take that long) is woken here: set() sets its event before it collects.
      if (signal_.is_set()) entry_->woken = true;
    }
    ~session() {
      entry_->ended = true;  // (on the session's executor: a cancellation queued there now does nothing)
      signal_.unlink(*entry_);
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    // Around an idle wait, on the session's executor: whether set() has asked it to end (checked
    // in the same turn of the executor as the receive starts, so that no cancellation falls
    // between the two), and whether the receive is waiting.
    bool woken() const noexcept { return entry_->woken; }
    void idle(bool on) noexcept { entry_->idle = on; }

   private:
    template <class Socket>
    static std::shared_ptr<entry> entry_for(Socket& socket, asio::any_io_executor own) {
      return std::make_shared<entry>(&socket, &cancel_socket<Socket>, std::move(own));
    }
    template <class Socket>
    static void cancel_socket(void* socket) {
      boost::system::error_code ignored;
      static_cast<Socket*>(socket)->cancel(ignored);
    }
    shutdown_signal& signal_;
    std::shared_ptr<entry> entry_;
  };

  void set() {
    event_.set();
    std::vector<std::shared_ptr<entry>> sessions;
    {
      std::lock_guard lock(mutex_);
      for (entry* e = first_; e; e = e->next) sessions.push_back(e->shared_from_this());
    }
    for (auto& e : sessions) {
      const auto executor = e->executor;
      asio::post(executor, [e = std::move(e)] {
        e->woken = true;
        if (e->idle && !e->ended) e->cancel(e->socket);
      });
    }
  }
  bool is_set() const noexcept { return event_.is_set(); }
  coral::event& event() noexcept { return event_; }

 private:
  struct entry : std::enable_shared_from_this<entry> {
    entry(void* s, void (*c)(void*), asio::any_io_executor e) : socket(s), cancel(c), executor(std::move(e)) {}
    void* socket;
    void (*cancel)(void*);
    asio::any_io_executor executor;
    // On the session's executor only.
    bool idle = false;
    bool woken = false;
    bool ended = false;
    // Guarded by the signal's mutex.
    entry* prev = nullptr;
    entry* next = nullptr;
  };
  void link(const std::shared_ptr<entry>& e) {
    std::lock_guard lock(mutex_);
    e->next = first_;
    if (first_) first_->prev = e.get();
    first_ = e.get();
  }
  void unlink(entry& e) {
    std::lock_guard lock(mutex_);
    (e.prev ? e.prev->next : first_) = e.next;
    if (e.next) e.next->prev = e.prev;
  }

  coral::event event_;
  std::mutex mutex_;
  entry* first_ = nullptr;  // the live sessions' entries (each owned by its session)
};

// Whether the client has sent bytes not read yet: a session that has them is not idle.
// (Socket: a stream socket of any protocol, TCP for the servers, a socket pair for a fuzz target.)
template <class Socket>
bool arrived(Socket& socket) {
  boost::system::error_code error;
  return boost::beast::get_lowest_layer(socket).available(error) > 0;  // (an error shows in the read that follows)
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

// Names the calling task after its connection ("http 10.0.0.7:51234") in coral::dump_tasks, when
// tasks are tracked (CORAL_TASK_TRACKING=1 in the environment): otherwise nothing is formatted.
template <class Socket>
coral::task<> name_session(const char* what, Socket& socket) {
  if (!coral::task_tracking()) co_return;
  boost::system::error_code error;
  std::ostringstream name;
  name << what << ' ' << boost::beast::get_lowest_layer(socket).remote_endpoint(error);
  co_await coral::this_task::set_name(name.str());
}

// Writes all of `buffers` (a task, so that it can be given a time-out).
template <class Socket, class Buffers>
coral::task<> write_all(Socket& socket, Buffers buffers) {
  co_await asio::async_write(socket, buffers, coral::use_task);
}

template <class Socket, class Buffers>
coral::task<std::size_t> write_some(Socket& socket, Buffers buffers) {
  co_return co_await socket.async_write_some(buffers, coral::use_task);
}

// Makes the socket's close a reset (SO_LINGER 0), for a client that does not read: what the
// kernel still holds to send it (up to its send buffer, megabytes on loopback) is freed when the
// session closes it, rather than kept until the client reads it or goes away (nginx's
// reset_timedout_connection). The session must close() the socket itself: a socket's destructor
// turns SO_LINGER off again (Asio's rule, so that no destructor blocks).
template <class Socket>
void reset_on_close(Socket& socket) {
  boost::system::error_code ignored;
  boost::beast::get_lowest_layer(socket).set_option(asio::socket_base::linger(true, 0), ignored);
}

// Writes all of `buffers`, as long as the client takes some of them: each write that the socket
// accepts something of starts the clock again, so a client that reads, however slowly, is never
// dropped for it; one whose socket accepts nothing for `limit` is (coral::timeout_error).
template <class Socket, class Buffers>
coral::task<> write_making_progress(Socket& socket, const Buffers& buffers, std::chrono::milliseconds limit) {
  boost::beast::buffers_suffix<Buffers> rest(buffers);
  try {
    while (asio::buffer_size(rest) > 0) rest.consume(co_await coral::with_timeout(limit, write_some(socket, rest)));
  } catch (const coral::timeout_error&) {
    reset_on_close(socket);
    throw;
  }
}

// Reads and drops what the client sends until it ends, or `limit` bytes.
template <class Socket>
coral::task<> drain(Socket& socket, std::size_t limit) {
  char scratch[16 * 1024];
  for (std::size_t total = 0; total < limit;)
    total += co_await socket.async_read_some(asio::buffer(scratch), coral::use_task);
}

// True when the client has sent something, false when the shutdown began.
template <class Socket>
coral::task<bool> client_or_shutdown(Socket& socket, coral::event& stopping) {
  auto woke = co_await coral::when_any(readable(socket), until_set(stopping));
  co_return woke.index() == 0;
}

// Until the client has sent something (true), or the shutdown began (false).
template <class Socket>
coral::task<bool> client_or_woken(Socket& socket, shutdown_signal::session& me) {
  if (me.woken()) co_return false;
  me.idle(true);
  char first;
  auto [error, n] =
      co_await socket.async_receive(asio::buffer(&first, 1), Socket::message_peek, asio::as_tuple(coral::use_task));
  me.idle(false);
  if (error == asio::error::operation_aborted && me.woken()) co_return false;
  if (error) throw boost::system::system_error(error);
  co_return true;
}

// A session's idle wait, the one place where the first phase of a shutdown ends it: true when the
// client has sent something, false when the shutdown began; throws coral::timeout_error after
// `limit`. (The time-out is around the wait, a task of its own: then it uses the session's own
// deadline watch, which stays armed from one idle wait to the next.)
template <class Socket>
coral::task<bool> wait_for_client(Socket& socket, shutdown_signal::session& me, std::chrono::milliseconds limit) {
  if (arrived(socket)) co_return true;  // (skips a round trip through epoll)
  co_return co_await coral::with_timeout(limit, client_or_woken(socket, me));
}

// The same on a TLS stream, which reads what arrives into `buffer`: what the client sent may be
// inside the stream already (a record read with the previous one, not yet decrypted), where no
// wait on the socket sees it. A read that loses to the shutdown may take bytes with it, which the
// session, ending, would not have answered anyway. False also when the client ended the
// connection (with its close_notify or without), so that the session ends TLS with its own.
template <tls_stream Stream, class DynamicBuffer>
coral::task<bool> read_or_woken(Stream& stream, DynamicBuffer& buffer, shutdown_signal::session& me) {
  if (me.woken()) co_return false;
  me.idle(true);
  auto [error, n] = co_await stream.async_read_some(buffer.prepare(4096), asio::as_tuple(coral::use_task));
  me.idle(false);
  if (error == asio::error::operation_aborted && me.woken()) co_return false;
  if (ended_by_client<Stream>(error)) co_return false;
  if (error) throw boost::system::system_error(error);
  buffer.commit(n);
  co_return true;
}

// A session's idle wait on a TLS stream, whose wait reads into `buffer`.
template <tls_stream Stream, class DynamicBuffer>
coral::task<bool> wait_for_client(Stream& stream, DynamicBuffer& buffer, shutdown_signal::session& me,
                                  std::chrono::milliseconds limit) {
  co_return co_await coral::with_timeout(limit, read_or_woken(stream, buffer, me));
}

// The same call on a plain socket is the socket's own wait (not a coroutine: no frame and no await
// of its own per request).
template <class Socket, class DynamicBuffer>
CORAL_CORO_WRAPPER coral::task<bool> wait_for_client(Socket& socket, DynamicBuffer&, shutdown_signal::session& me,
                                                     std::chrono::milliseconds limit) {
  return wait_for_client(socket, me, limit);
}

// How long a TLS session that ends waits for the client's close_notify after its own, when the
// client is not known to be sending (it may not be reading either): a clean close for a client
// that answers, and no session held long by one that does not.
inline constexpr auto close_notify_wait = 1s;

// Ends TLS on `stream` cleanly: the session's close_notify, then what the client still sends is
// read and dropped until its close_notify or end of stream, for at most `limit` (the TLS form of a
// lingering close: a client still sending reads the last response rather than a reset).
template <tls_stream Stream>
coral::task<> close_tls(Stream& stream, std::chrono::milliseconds limit) {
  try {
    co_await coral::with_timeout(limit, [&]() -> coral::task<> { co_await stream.async_shutdown(coral::use_task); }());
  } catch (const coral::timeout_error&) {
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    // the client's end of stream, or its reset, without a close_notify
  }
}

// Whether an accept failed for want of resources (descriptors, memory), which only time frees.
inline bool out_of_resources(const boost::system::error_code& e) {
  namespace errc = boost::system::errc;
  return e == errc::too_many_files_open || e == errc::too_many_files_open_in_system || e == errc::no_buffer_space ||
         e == errc::not_enough_memory;
}

// A second listener of a server, on 127.0.0.1 only, whose connections get sessions of their own
// (http_server's debug routes): `session(socket)` returns each connection's task.
template <class Session>
struct private_listener {
  const char* what;     // announced as "<what> on 127.0.0.1:<port>"
  unsigned short port;  // 0: any free port
  Session session;
};
// A server without one.
struct no_private_listener {};

// Where a server listens, and what stops it.
struct listener {
  std::vector<tcp::acceptor> acceptors;  // one, or one per context of the pool (--reuse-port)
  asio::signal_set signals;              // set up before the port is announced
  asio::signal_set dump_signal;          // SIGUSR1: coral::dump_tasks to stderr
  // Where the session of a connection that `acceptor` accepts lives.
  std::function<asio::any_io_executor(tcp::acceptor&)> session_executor;
  std::optional<tcp::acceptor> private_acceptor;  // its sessions live on the acceptor's executor
};

// What a connection past --max-connections gets: `refusal`, then a graceful close (the send side
// shut down, then what the client sends read and dropped until it closes, for at most
// refusal_linger and 64 KiB), so that a client that sent a request at once reads the refusal
// rather than a reset. At most refusals_at_once are in progress; past that a connection is
// closed at once.
inline constexpr std::size_t refusals_at_once = 256;
inline constexpr auto refusal_linger = 1s;
// The line servers' refusal (echo, chat).
inline constexpr std::string_view line_refusal = "server full: too many connections\n";

inline coral::task<> refuse_connection(tcp::socket socket, std::string_view refusal) {
  try {
    co_await coral::with_timeout(refusal_linger, [&]() -> coral::task<> {
      co_await write_all(socket, asio::buffer(refusal.data(), refusal.size()));
      socket.shutdown(tcp::socket::shutdown_send);
      co_await drain(socket, 64 * 1024);
    }());
  } catch (const coral::timeout_error&) {
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    // the client's end of stream, or its reset
  }
}

// A plain server's refusal of a connection: refuse_connection with `refusal`. (serve() and run()
// take any callable that returns the refusal's task for a socket: a TLS server's first shakes
// hands, tls.hpp.)
inline auto refuse_with(std::string_view refusal) {
  return [refusal](tcp::socket socket) { return refuse_connection(std::move(socket), refusal); };
}

// The slots serve() hands out: made before the io_context(s) the sessions run on, since a slot is
// given back when its task's callable is destroyed, which may come after serve() has returned.
// The private listener's sessions have slots of their own, so that a public port that is full
// does not shut the operator out.
inline constexpr std::size_t private_connections = 16;
struct connection_slots {
  explicit connection_slots(std::size_t max_connections)
      : sessions(max_connections), private_sessions(private_connections), refusals(refusals_at_once) {}
  coral::semaphore sessions;          // one per session, from its accept until its task has ended
  coral::semaphore private_sessions;  // the same, for the private listener's
  coral::semaphore refusals;          // one per connection being refused
};

// The server's life: accepts, with `session(socket)` returning each connection's task (spawned
// into the session group, on the socket's executor), and `private_session(socket)` each one of the
// private listener's, until a signal; then the two phases above. A session holds one of the
// o.max_connections slots (one of the private_connections, for the private listener's) from its
// accept until its task has ended, however it ends; a connection accepted when none is free gets
// the task `refuse(socket)` (refuse_with, for a plain server).
template <class Refuse, class Session, class PrivateSession = std::nullptr_t>
coral::task<> serve(listener& l, const options& o, shutdown_signal& stopping, connection_slots& slots, Refuse refuse,
                    Session session, [[maybe_unused]] PrivateSession private_session = nullptr) {
  auto executor = co_await coral::this_task::executor;
  coral::task_group sessions(executor);
  auto accept_loop = [&](tcp::acceptor& acceptor, auto& session, coral::semaphore& free_slots,
                         std::size_t slot_count) -> coral::task<> {
    long failed = 0;   // accepts that failed for want of resources, since the last that did not
    long refused = 0;  // connections refused for want of a slot, since the last one served
    for (;;) {
      auto [error, socket] =
          co_await acceptor.async_accept(l.session_executor(acceptor), asio::as_tuple(coral::use_task));
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
      auto where = socket.get_executor();
      if (!free_slots.try_acquire()) {
        if (refused++ == 0) std::fprintf(stderr, "accept: %zu connections: refusing more\n", slot_count);
        if (slots.refusals.try_acquire()) {
          sessions.spawn(where, [&refuse, s = std::move(socket),
                                 slot = coral::semaphore_permit(slots.refusals, std::adopt_lock)]() mutable {
            return refuse(std::move(s));
          });
        }
        continue;  // (without a refusal slot: closed at once)
      }
      if (refused > 0) {
        std::fprintf(stderr, "accept: serving again after %ld refused connections\n", refused);
        refused = 0;
      }
      sessions.spawn(where, [&session, s = std::move(socket),
                             slot = coral::semaphore_permit(free_slots, std::adopt_lock)]() mutable {
        return session(std::move(s));
      });
    }
  };
  // Each acceptor's loop on the acceptor's own context.
  auto accepting = [&]() -> coral::task<> {
    coral::task_group loops(executor);
    for (auto& acceptor : l.acceptors)
      loops.spawn(acceptor.get_executor(), accept_loop(acceptor, session, slots.sessions, o.max_connections));
    if constexpr (!std::is_same_v<PrivateSession, std::nullptr_t>) {
      loops.spawn(l.private_acceptor->get_executor(),
                  accept_loop(*l.private_acceptor, private_session, slots.private_sessions, private_connections));
    }
    co_await loops.join();
  };
  auto signal = [&]() -> coral::task<int> { co_return co_await l.signals.async_wait(coral::use_task); };
  // `kill -USR1 <pid>`: what every task is doing, on stderr; the server goes on.
  auto dumping = [&]() -> coral::task<> {
    for (;;) {
      co_await l.dump_signal.async_wait(coral::use_task);
      std::ostringstream dump;
      coral::dump_tasks(dump);
      std::fputs(dump.str().c_str(), stderr);
    }
  };
  const auto got = co_await coral::when_any(accepting(), signal(), dumping());
  std::printf("signal %d: shutting down, %zu sessions\n", std::get<1>(got), sessions.size());
  std::fflush(stdout);

  for (auto& acceptor : l.acceptors) acceptor.close();
  if (l.private_acceptor) l.private_acceptor->close();
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

// An acceptor on `context` listening on `where`; with `reuse_port`, one of several on the same
// port, among which the kernel spreads the connections.
inline tcp::acceptor listening_acceptor(asio::io_context& context, const tcp::endpoint& where, bool reuse_port) try {
  tcp::acceptor acceptor(context);
  acceptor.open(where.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  if (reuse_port) {
    const int on = 1;
    if (::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) {
      throw boost::system::system_error(errno, boost::system::system_category(), "SO_REUSEPORT");
    }
  }
  acceptor.bind(where);
  acceptor.listen();
  return acceptor;
} catch (const boost::system::system_error& e) {
  std::ostringstream what;
  what << "cannot listen on " << where;
  throw boost::system::system_error(e.code(), what.str());
}

// Runs `serve(listener, o, stopping, slots, refuse, session)` on o.threads threads sharing an
// io_context, or on an io_pool of o.io_pool contexts; returns the exit status. SIGINT and SIGTERM are caught from
// before the port is announced: a supervisor that stops the server as soon as it listens gets the
// graceful shutdown too. With a private_listener, its acceptor listens on 127.0.0.1 (whatever
// --bind says), on the first context.
template <class Refuse, class Session, class Private = no_private_listener>
int run(const options& o, shutdown_signal& stopping, Refuse refuse, Session session,
        [[maybe_unused]] Private private_side = {}) {
  constexpr bool has_private = !std::is_same_v<Private, no_private_listener>;
  // A connection is a descriptor: allow as many as the system lets this process have.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  // A second SIGINT / SIGTERM while the server exits is swallowed: Asio restores a signal's
  // default action (the end of the process, with the signal as its status) when its last
  // registration goes, and this one never goes.
  struct swallowed_signals {
    asio::io_context context;
    asio::signal_set signals{context, SIGINT, SIGTERM};
  };
  static swallowed_signals* const swallowed = new swallowed_signals;
  static_cast<void>(swallowed);
  auto announce = [&](const listener& l) {
    std::printf("listening on %u\n", static_cast<unsigned>(l.acceptors.front().local_endpoint().port()));
    if constexpr (has_private) {
      std::printf("%s on 127.0.0.1:%u\n", private_side.what,
                  static_cast<unsigned>(l.private_acceptor->local_endpoint().port()));
    }
    std::fflush(stdout);
  };
  auto listen_privately = [&](listener& l, asio::io_context& context) {
    if constexpr (has_private) {
      l.private_acceptor.emplace(
          listening_acceptor(context, tcp::endpoint(asio::ip::address_v4::loopback(), private_side.port), false));
    }
  };
  connection_slots slots(o.max_connections);  // (before the contexts: see there)
  auto serving = [&](listener& l) {
    if constexpr (has_private) {
      return serve(l, o, stopping, slots, refuse, session, private_side.session);
    } else {
      return serve(l, o, stopping, slots, refuse, session);
    }
  };
  try {
    if (o.io_pool == 0) {
      asio::io_context io(static_cast<int>(o.threads));
      listener l{{},
                 asio::signal_set(io, SIGINT, SIGTERM),
                 asio::signal_set(io, SIGUSR1),
                 [](tcp::acceptor& a) { return a.get_executor(); },
                 {}};
      l.acceptors.push_back(listening_acceptor(io, tcp::endpoint(o.bind, o.port), false));
      listen_privately(l, io);
      announce(l);
      auto job = coral::spawn(io.get_executor(), serving(l));
      std::vector<std::jthread> threads;
      for (unsigned i = 1; i < o.threads; ++i) threads.emplace_back([&io] { io.run(); });
      io.run();
      threads.clear();
      job.get_result();  // rethrows what ended the server, if anything did
      return 0;
    }
    coral::io_pool pool(o.io_pool,
                        o.pin_threads ? coral::io_pool::pinning::one_cpu_per_thread : coral::io_pool::pinning::none);
    listener l{
        {}, asio::signal_set(pool.context(0), SIGINT, SIGTERM), asio::signal_set(pool.context(0), SIGUSR1), {}, {}};
    l.acceptors.push_back(listening_acceptor(pool.context(0), tcp::endpoint(o.bind, o.port), o.reuse_port));
    listen_privately(l, pool.context(0));
    if (o.reuse_port) {
      // Each acceptor's connections stay on its context. (The first one chose the port.)
      const auto port = l.acceptors.front().local_endpoint().port();
      for (std::size_t i = 1; i < pool.size(); ++i)
        l.acceptors.push_back(listening_acceptor(pool.context(i), tcp::endpoint(o.bind, port), true));
      l.session_executor = [](tcp::acceptor& a) { return a.get_executor(); };
    } else {
      // One acceptor hands the connections to the contexts in turn.
      l.session_executor = [&pool](tcp::acceptor&) { return asio::any_io_executor(pool.get_executor()); };
    }
    announce(l);
    auto job = coral::spawn(pool.context(0).get_executor(), serving(l));
    job.wait();
    pool.stop();
    pool.join();
    job.get_result();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace net_demo
