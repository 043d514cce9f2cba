// An Asio server written the classic way (handlers, shared_from_this, no coroutines), with coral
// added in a handful of lines. Protocol, one line each way:
//   "7"     -> "49"                        computed by a coral task, sent back through a channel
//   "a 7"   -> "49 (via asio::awaitable)"  an asio::awaitable that awaits a coral task
//   existing_server [--port 55555]
// Try it: `nc localhost 55555`, type 12.
//
// The three places coral joins the existing code are marked [coral 1], [coral 2], [coral 3].
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <coral/coral.hpp>  // [coral] the one include
#include <cstdio>
#include <deque>
#include <memory>
#include <string>

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

// New code, written as coral tasks: straight-line, and it may wait without holding a thread.
coral::task<long> square_slowly(long n) {
  co_await coral::sleep_for(10ms);                            // (a database, a cache, another service...)
  if (n > 3'037'000'499 || n < -3'037'000'499) co_return -1;  // (the square would not fit)
  co_return n* n;
}

coral::task<> answer(long n, coral::channel<std::string>& replies) {
  const long sq = co_await square_slowly(n);
  co_await replies.send(std::to_string(sq) + "\n");
}

// Existing code already written with asio::awaitable.
asio::awaitable<std::string> answer_in_awaitable(long n) {
  auto ex = co_await asio::this_coro::executor;
  // [coral 3] an awaitable awaits a coral task: spawn with use_awaitable.
  const long sq = co_await coral::spawn(ex, square_slowly(n), asio::use_awaitable);
  co_return std::to_string(sq) + " (via asio::awaitable)\n";
}

class session : public std::enable_shared_from_this<session> {
 public:
  explicit session(tcp::socket socket) : socket_(std::move(socket)) {}

  void start() {
    read_line();
    deliver_replies();
  }

 private:
  void read_line() {
    asio::async_read_until(socket_, asio::dynamic_buffer(input_, 1024), '\n',
                           [self = shared_from_this()](boost::system::error_code e, std::size_t n) {
                             if (e) return self->stop();
                             const std::string line = self->input_.substr(0, n - 1);
                             self->input_.erase(0, n);
                             self->handle(line);
                             self->read_line();
                           });
  }

  void handle(const std::string& line) {
    const bool via_awaitable = line.rfind("a ", 0) == 0;
    const long n = std::strtol(line.c_str() + (via_awaitable ? 2 : 0), nullptr, 10);
    if (via_awaitable) {
      asio::co_spawn(socket_.get_executor(), answer_in_awaitable(n),
                     [self = shared_from_this()](std::exception_ptr e, std::string reply) {
                       if (!e) self->write(std::move(reply));
                     });
    } else {
      // [coral 1] a handler hands work to a coral task; the task ends on its own (detached). The
      // callable, kept alive until its task ends, keeps the session (and its channel) alive.
      coral::spawn(
          socket_.get_executor(), [self = shared_from_this(), n] { return answer(n, self->replies_); }, asio::detached);
    }
  }

  // [coral 2] results come back through the channel, received with a plain callback. As with any
  // Asio operation, the callback runs on its associated executor: the socket's here (a channel has
  // no executor of its own; without one the callback would run on the system executor's threads,
  // beside this session's, and outlive the io_context).
  void deliver_replies() {
    replies_.async_receive(asio::bind_executor(
        socket_.get_executor(), [self = shared_from_this()](boost::system::error_code e, std::string reply) {
          if (e) return;  // closed: the session is over
          self->write(std::move(reply));
          self->deliver_replies();
        }));
  }

  // One write at a time on a socket (two would interleave their bytes): replies queue up.
  void write(std::string reply) {
    outbox_.push_back(std::move(reply));
    if (outbox_.size() == 1) write_front();
  }

  void write_front() {
    asio::async_write(socket_, asio::buffer(outbox_.front()),
                      [self = shared_from_this()](boost::system::error_code e, std::size_t) {
                        if (e) return self->stop();
                        self->outbox_.pop_front();
                        if (!self->outbox_.empty()) self->write_front();
                      });
  }

  void stop() {
    boost::system::error_code ignored;
    socket_.close(ignored);
    replies_.close();  // ends deliver_replies, and any answer() still sending
  }

  tcp::socket socket_;
  std::string input_;
  std::deque<std::string> outbox_;
  coral::channel<std::string> replies_{16};
};

class server {
 public:
  // (On loopback, as the demo servers listen by default: an example is not a service to expose.)
  server(asio::io_context& io, unsigned short port) : acceptor_(io, {asio::ip::address_v4::loopback(), port}) {
    accept();
  }
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  void stop() { acceptor_.close(); }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code e, tcp::socket socket) {
      if (e == asio::error::operation_aborted) return;
      if (!e) std::make_shared<session>(std::move(socket))->start();
      accept();
    });
  }

  tcp::acceptor acceptor_;
};

int main(int argc, char* argv[]) {
  unsigned short port = 55555;
  if (argc == 3 && std::string(argv[1]) == "--port") port = static_cast<unsigned short>(std::atoi(argv[2]));
  asio::io_context io;
  server s(io, port);
  asio::signal_set signals(io, SIGINT, SIGTERM);  // (before the port is announced)
  std::printf("listening on %u\n", static_cast<unsigned>(s.port()));
  std::fflush(stdout);
  signals.async_wait([&](boost::system::error_code, int) {
    s.stop();
    io.stop();  // as such servers do: what is still running is destroyed with the io_context
  });
  io.run();
  return 0;
}
