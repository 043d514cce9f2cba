#pragma once

// The chat demo's connection and room: chat_server runs session() on each accepted TCP socket; the
// fuzz target for the line protocols runs the same function on one end of a socket pair.
//
// Per session, a reader task and a writer task joined by the session's outbox, a
// coral::channel<line> without bound whose cost is counted: the room puts lines in, the writer
// takes what has come (up to 64 KiB at a time) and writes it in one gathering write. A line is
// one shared buffer, however many outboxes it is in. The room never waits for a
// client, so a burst never holds up the room; the lines wait in each client's backlog. A client is
// dropped, and the server says so, when its backlog would pass the backlog limit (it has fallen
// that far behind the room), or when its socket has accepted nothing for the write timeout (it
// does not read). A backlog counts what its lines cost in memory: their bytes, and for each line
// what holding it costs (queued_line_cost), so that many short lines cannot take more memory than
// the limit says. A line of more than 4 KiB (its newline included), or one not complete within
// the line timeout of its first byte, closes the session that sent it. A client that only listens
// is not idle: no idle timeout closes it.

#include <atomic>
#include <boost/asio/read_until.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "server.hpp"

namespace net_demo::chat_demo {

// A line as the room hands it out: one buffer, shared by every outbox it is in.
using line = std::shared_ptr<const std::string>;

inline constexpr std::size_t max_line = 4096;
inline constexpr std::size_t write_batch = 64 * 1024;
// What a queued line costs beside its bytes: its place in the outbox, and what holding the line
// costs if this client holds it last (its std::string, and the allocator's bookkeeping).
inline constexpr std::size_t queued_line_cost = sizeof(line) + sizeof(std::string) + 32;

inline std::size_t cost_of(const std::string& line) {
  return line.size() + queued_line_cost;
}
// The smallest backlog that can hold any line a client may send.
inline constexpr std::size_t longest_line_cost = max_line + queued_line_cost;

struct chat_options {
  std::size_t backlog_limit = 1024 * 1024;
  std::chrono::milliseconds write_timeout = 10s;
  std::chrono::milliseconds line_timeout = 10s;  // from a line's first byte to its newline
};

struct participant {
  explicit participant(std::size_t limit) : backlog_limit(limit) {}

  // The room's delivery: the line joins the backlog, unless the backlog would pass its limit (then
  // the client is dropped). Never waits.
  void offer(const line& l) {
    const std::size_t cost = cost_of(*l);
    if (backlog.fetch_add(cost, std::memory_order_relaxed) + cost > backlog_limit) {
      backlog.fetch_sub(cost, std::memory_order_relaxed);
      drop("it fell behind: its backlog would pass " + std::to_string(backlog_limit) + " bytes");
      return;
    }
    outbox.try_send(line(l));  // (fails only once the session has ended)
  }
  void drop(const std::string& why) {
    if (dropped.exchange(true)) return;
    std::printf("dropped a client: %s\n", why.c_str());
    std::fflush(stdout);
    kicked.set();
  }

  coral::channel<line> outbox{coral::unlimited};
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
  void deliver(std::string text) {
    const auto l = std::make_shared<const std::string>(std::move(text));
    std::vector<std::shared_ptr<participant>> everyone;
    {
      std::lock_guard lock(mutex_);
      everyone.assign(participants_.begin(), participants_.end());
    }
    for (const auto& p : everyone) p->offer(l);
  }

 private:
  std::mutex mutex_;
  std::set<std::shared_ptr<participant>> participants_;
};

template <class Socket>
coral::task<std::size_t> read_line(Socket& socket, std::string& buffer) {
  co_return co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer, max_line), '\n', coral::use_task);
}

template <class Socket>
coral::task<> reader(Socket& socket, room& r, coral::event& stopping, std::chrono::milliseconds line_timeout) {
  std::string buffer;
  auto line_began = std::chrono::steady_clock::now();
  for (;;) {
    // Every complete line a read brought goes to the room as one message (one buffer, one entry in
    // each backlog): a burst of short lines costs the listeners what its bytes cost.
    std::size_t n = buffer.rfind('\n') + 1;
    if (n == 0) {
      // Idle (nothing buffered): the first phase of a shutdown ends the session here, having
      // taken nothing from the socket. A line's clock starts with its first byte.
      if (buffer.empty()) {
        if (!co_await client_or_shutdown(socket, stopping)) co_return;
        line_began = std::chrono::steady_clock::now();
      }
      // A line over max_line fails with asio::error::not_found, one not complete in time with
      // coral::timeout_error: either ends the session.
      co_await coral::with_deadline(line_began + line_timeout, read_line(socket, buffer));
      n = buffer.rfind('\n') + 1;
    }
    r.deliver(buffer.substr(0, n));
    buffer.erase(0, n);
    if (!buffer.empty()) line_began = std::chrono::steady_clock::now();  // (what follows came with the last read)
  }
}

template <class Socket>
coral::task<> writer(Socket& socket, participant& me, std::chrono::milliseconds write_timeout) {
  std::vector<line> batch;
  std::vector<asio::const_buffer> buffers;
  for (;;) {
    batch.push_back(co_await me.outbox.receive());
    std::size_t bytes = batch.back()->size();
    while (bytes < write_batch) {
      auto more = me.outbox.try_receive();
      if (!more) break;
      bytes += (*more)->size();
      batch.push_back(std::move(*more));
    }
    std::size_t cost = 0;
    for (const auto& l : batch) {
      buffers.push_back(asio::buffer(*l));
      cost += cost_of(*l);
    }
    try {
      co_await write_making_progress(socket, buffers, write_timeout);
    } catch (const coral::timeout_error&) {
      me.drop("it does not read: its socket accepted nothing for " + std::to_string(write_timeout.count()) + " ms");
      co_return;  // (the kick ends the session)
    }
    me.backlog.fetch_sub(cost, std::memory_order_relaxed);
    batch.clear();
    buffers.clear();
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
    co_await coral::when_any(reader(socket, r, stopping, o.line_timeout), writer(socket, *me, o.write_timeout),
                             until_set(me->kicked));
    if (me->dropped) {
      // (It fell behind or does not read: what the kernel still holds for it goes too.)
      reset_on_close(socket);
      boost::system::error_code ignored;
      socket.close(ignored);
    }
  } catch (const boost::system::system_error& e) {
    r.leave(me);
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
    co_return;  // the client went away, or sent a line too long or too slowly
  }
  r.leave(me);
}

}  // namespace net_demo::chat_demo
