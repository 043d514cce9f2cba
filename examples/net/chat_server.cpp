// Line-based chat: every line a client sends goes to every client in the room, the sender too.
//   chat_server [--port 55555] [--threads 1] [--grace-ms 5000] [--outbox 64]
// Try it: `nc localhost 55555` in two terminals.
//
// Per session, a reader task and a writer task joined by the session's outbox, a
// coral::channel<std::string>: the room puts lines in, the writer waits on the channel for them.
// A slow client is never waited for: the room only ever try_send()s; when a client's outbox is
// full (--outbox lines it has not taken), it is disconnected. A line of more than 4 KiB (its
// newline included) closes the session that sent it.
#include <algorithm>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "server.hpp"

using namespace net_demo;

constexpr std::size_t max_line = 4096;

struct participant {
  explicit participant(std::size_t outbox_size) : outbox(outbox_size) {}
  coral::channel<std::string> outbox;
  coral::event kicked;  // the outbox overflowed
};

class room {
 public:
  void join(const std::shared_ptr<participant>& p) {
    std::lock_guard lock(mutex_);
    participants_.insert(p);
  }
  void leave(const std::shared_ptr<participant>& p) {
    std::lock_guard lock(mutex_);
    participants_.erase(p);
  }
  // Sessions run on several threads; the lock guards the set only, and is not held while
  // delivering (a delivery may wake a writer).
  void deliver(const std::string& line) {
    std::vector<std::shared_ptr<participant>> everyone;
    {
      std::lock_guard lock(mutex_);
      everyone.assign(participants_.begin(), participants_.end());
    }
    for (const auto& p : everyone) {
      if (!p->outbox.try_send(std::string(line))) p->kicked.set();
    }
  }

 private:
  std::mutex mutex_;
  std::set<std::shared_ptr<participant>> participants_;
};

coral::task<> reader(tcp::socket& socket, room& r, coral::event& stopping) {
  std::string buffer;
  for (;;) {
    // Idle (no whole line buffered; a read may take several at once): the first phase of a
    // shutdown ends the session here, having taken nothing from the socket.
    if (buffer.find('\n') == std::string::npos && !co_await client_or_shutdown(socket, stopping)) co_return;
    // A line over max_line fails with asio::error::not_found: the session ends.
    const std::size_t n =
        co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer, max_line), '\n', coral::use_task);
    r.deliver(buffer.substr(0, n));
    buffer.erase(0, n);
  }
}

coral::task<> writer(tcp::socket& socket, coral::channel<std::string>& outbox) {
  for (;;) {
    std::string line = co_await outbox.receive();
    co_await asio::async_write(socket, asio::buffer(line), coral::use_task);
  }
}

// The first of reader, writer and the kick to end ends the session; when_any cancels and awaits
// the others, so the socket outlives every operation on it.
coral::task<> session(tcp::socket socket, room& r, coral::event& stopping, std::size_t outbox) {
  auto me = std::make_shared<participant>(outbox);
  r.join(me);
  try {
    co_await coral::when_any(reader(socket, r, stopping), writer(socket, me->outbox), until_set(me->kicked));
  } catch (const boost::system::system_error& e) {
    r.leave(me);
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    co_return;                                              // the client went away, or sent a line too long
  }
  r.leave(me);
}

int main(int argc, char* argv[]) {
  // --outbox is chat_server's own option: taken out before the common ones are parsed.
  std::size_t outbox = 64;
  std::vector<char*> common{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--outbox" && i + 1 < argc) {
      outbox = std::max<std::size_t>(1, std::strtoul(argv[++i], nullptr, 10));
    } else {
      common.push_back(argv[i]);
    }
  }
  const options o = parse_options(static_cast<int>(common.size()), common.data(),
                                  "[--port N] [--threads N] [--grace-ms N] [--outbox N]");
  coral::event stopping;
  room r;
  return run(o, [&](tcp::acceptor& acceptor, asio::signal_set& signals) {
    return serve(acceptor, signals, o, stopping,
                 [&](tcp::socket socket) { return session(std::move(socket), r, stopping, outbox); });
  });
}
