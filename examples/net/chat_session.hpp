#pragma once

// The chat demo's connection and room: chat_server runs session() on each accepted TCP socket; the
// fuzz target for the line protocols runs the same function on one end of a socket pair.
//
// Per session, a reader task and a writer task joined by the session's outbox, a
// coral::channel<std::string> without bound whose cost is counted: the room puts lines in, the
// writer takes what has come (up to 64 KiB at a time) and writes it. The room never waits for a
// client, so a burst never holds up the room; the lines wait in each client's backlog. A client is
// dropped, and the server says so, when its backlog would pass the backlog limit (it has fallen
// that far behind the room), or when its socket has accepted nothing for the write timeout (it
// does not read). A backlog counts what its lines cost in memory: their bytes, and for each line
// what holding it costs (queued_line_cost), so that many short lines cannot take more memory than
// the limit says. A line of more than 4 KiB (its newline included) closes the session that sent
// it. A client that only listens is not idle: no idle timeout closes it.

#include <atomic>
#include <boost/asio/read_until.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "server.hpp"

namespace net_demo::chat_demo {

inline constexpr std::size_t max_line = 4096;
inline constexpr std::size_t write_batch = 64 * 1024;
// What a queued line costs beside its bytes: its std::string in the outbox, and the allocator's
// bookkeeping for its bytes.
inline constexpr std::size_t queued_line_cost = sizeof(std::string) + 32;

inline std::size_t cost_of(const std::string& line) {
  return line.size() + queued_line_cost;
}
// The smallest backlog that can hold any line a client may send.
inline constexpr std::size_t longest_line_cost = max_line + queued_line_cost;

struct chat_options {
  std::size_t backlog_limit = 1024 * 1024;
  std::chrono::milliseconds write_timeout = 10s;
};

struct participant {
  explicit participant(std::size_t limit) : backlog_limit(limit) {}

  // The room's delivery: the line joins the backlog, unless the backlog would pass its limit (then
  // the client is dropped). Never waits.
  void offer(const std::string& line) {
    const std::size_t cost = cost_of(line);
    if (backlog.fetch_add(cost, std::memory_order_relaxed) + cost > backlog_limit) {
      backlog.fetch_sub(cost, std::memory_order_relaxed);
      drop("it fell behind: its backlog would pass " + std::to_string(backlog_limit) + " bytes");
      return;
    }
    outbox.try_send(std::string(line));  // (fails only once the session has ended)
  }
  void drop(const std::string& why) {
    if (dropped.exchange(true)) return;
    std::printf("dropped a client: %s\n", why.c_str());
    std::fflush(stdout);
    kicked.set();
  }

  coral::channel<std::string> outbox{coral::unlimited};
  std::atomic<std::size_t> backlog{0};  // the cost of the lines in the outbox and in the writer's hands
  const std::size_t backlog_limit;
  std::atomic<bool> dropped{false};
  coral::event kicked;
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
    for (const auto& p : everyone) p->offer(line);
  }

 private:
  std::mutex mutex_;
  std::set<std::shared_ptr<participant>> participants_;
};

template <class Socket>
coral::task<> reader(Socket& socket, room& r, coral::event& stopping) {
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

template <class Socket>
coral::task<std::size_t> write_some(Socket& socket, asio::const_buffer data) {
  co_return co_await socket.async_write_some(data, coral::use_task);
}

template <class Socket>
coral::task<> writer(Socket& socket, participant& me, std::chrono::milliseconds write_timeout) {
  for (;;) {
    std::string batch = co_await me.outbox.receive();
    std::size_t cost = cost_of(batch);
    while (batch.size() < write_batch) {
      auto more = me.outbox.try_receive();
      if (!more) break;
      cost += cost_of(*more);
      batch += *more;
    }
    // Each write that the socket accepts something of starts the clock again: a client that reads,
    // however slowly, is not dropped for it.
    for (std::size_t written = 0; written < batch.size();) {
      try {
        written += co_await coral::with_timeout(write_timeout, write_some(socket, asio::buffer(batch) + written));
      } catch (const coral::timeout_error&) {
        me.drop("it does not read: its socket accepted nothing for " + std::to_string(write_timeout.count()) + " ms");
        co_return;  // (the kick ends the session)
      }
    }
    me.backlog.fetch_sub(cost, std::memory_order_relaxed);
  }
}

// The first of reader, writer and the kick to end ends the session; when_any cancels and awaits
// the others, so the socket outlives every operation on it.
template <class Socket>
coral::task<> session(Socket socket, room& r, coral::event& stopping, const chat_options& o) {
  co_await name_session("chat", socket);
  auto me = std::make_shared<participant>(o.backlog_limit);
  r.join(me);
  try {
    co_await coral::when_any(reader(socket, r, stopping), writer(socket, *me, o.write_timeout), until_set(me->kicked));
  } catch (const boost::system::system_error& e) {
    r.leave(me);
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    co_return;                                              // the client went away, or sent a line too long
  }
  r.leave(me);
}

}  // namespace net_demo::chat_demo
