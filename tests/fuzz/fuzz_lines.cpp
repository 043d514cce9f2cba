// Fuzz target for the echo and chat demos' sessions (examples/net/echo_session.hpp,
// chat_session.hpp): the servers' own session functions, each on one end of a socket pair whose
// other end is a client driven by the input. The input's first byte picks the protocol, the number
// of clients (chat: 1 to 4) and how the run ends; the rest is a program of client steps: append a
// line (or, for echo, raw bytes) to what a client will send, write part of that, let the server
// run, stop or resume reading.
//
// Checked beyond "no crash, no leak, no hang":
// - echo: the client gets back exactly what it sent, then the end of the stream.
// - chat: a client whose session stays open receives every line each sender got delivered (its
//   lines before its first line over the 4 KiB limit) exactly once and, per sender, in order; a
//   client whose session closed (its own over-long line) received, per sender, a prefix of those;
//   nothing else. Every session ends without an exception when its client closes or when the
//   shutdown begins.
//
// Built as a libFuzzer target (CORAL_FUZZ=ON, clang; scripts/fuzz.sh lines), and without
// libFuzzer as a test that replays the seed corpus (fuzz_lines_corpus in CTest).
#include <algorithm>
#include <array>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../../examples/net/chat_session.hpp"
#include "../../examples/net/echo_session.hpp"

namespace {

namespace asio = boost::asio;
using local_socket = asio::local::stream_protocol::socket;

std::string program_text;  // what the input decoded to, printed with a violation

[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "fuzz_lines: %s\n--- the program ---\n%s\n", what.c_str(), program_text.c_str());
  std::abort();
}

// Reads the input front to back; past its end, zeros.
struct input_reader {
  std::string_view rest;
  bool empty() const { return rest.empty(); }
  std::uint8_t byte() {
    if (rest.empty()) return 0;
    const auto b = static_cast<std::uint8_t>(rest.front());
    rest.remove_prefix(1);
    return b;
  }
  std::string bytes(std::size_t n) {
    n = std::min(n, rest.size());
    std::string out(rest.substr(0, n));
    rest.remove_prefix(n);
    return out;
  }
};

// One client: writes are chained in order, reads run while it is reading.
struct client {
  explicit client(asio::io_context& context) : socket(context) {}

  void send(std::string bytes) {
    if (bytes.empty()) return;
    queue.push_back(std::move(bytes));
    if (!writing) write_next();
  }
  void write_next() {
    if (queue.empty()) {
      writing = false;
      if (closing) shut_down_sending();
      return;
    }
    writing = true;
    asio::async_write(socket, asio::buffer(queue.front()), [this](boost::system::error_code e, std::size_t) {
      queue.pop_front();
      if (e) queue.clear();  // (the server closed: what is left cannot arrive)
      write_next();
    });
  }
  // Once what was queued is written.
  void close_sending() {
    closing = true;
    if (!writing) shut_down_sending();
  }
  void shut_down_sending() {
    boost::system::error_code ignored;
    socket.shutdown(local_socket::shutdown_send, ignored);
  }
  void set_reading(bool on) {
    paused = !on;
    if (on && !read_pending && !ended) read_next();
  }
  void read_next() {
    read_pending = true;
    socket.async_read_some(asio::buffer(chunk), [this](boost::system::error_code e, std::size_t n) {
      read_pending = false;
      received.append(chunk.data(), n);
      if (e) {
        ended = true;  // eof, or a reset after the server closed
        return;
      }
      if (!paused) read_next();
    });
  }

  local_socket socket;
  std::deque<std::string> queue;
  bool writing = false, closing = false;
  bool paused = false, read_pending = false, ended = false;
  std::array<char, 8192> chunk;
  std::string received;
  std::string unsent;  // appended by the program, not written yet
  std::string sent;    // everything handed to the socket
};

enum class ending { clients_close, shutdown };

// Steps the context until `done()`. The sessions hang (a violation) if the context has nothing to
// run for 100 waits of 50 ms in a row, or runs ten million handlers without getting there:
// counted in handlers and idle waits, not wall time, so that a starved process is not a hang.
template <class Done>
void run_until(asio::io_context& context, Done done, const char* waiting_for) {
  int idle_waits = 0;
  long handlers = 0;
  while (!done()) {
    context.restart();
    if (context.run_one_for(std::chrono::milliseconds(50)) == 0) {
      if (++idle_waits > 100) violation(std::string("nothing left to run while waiting for ") + waiting_for);
    } else {
      idle_waits = 0;
      if (++handlers > 10'000'000) violation(std::string("still running without ") + waiting_for);
    }
  }
}

// The program's steps, for either protocol. `line(i, in)` appends what client i will send.
template <class Line>
void run_steps(asio::io_context& context, std::vector<std::unique_ptr<client>>& clients, input_reader& in, Line line) {
  while (!in.empty()) {
    const std::uint8_t op = in.byte();
    client& c = *clients[op % clients.size()];
    const std::size_t who = op % clients.size();
    switch ((op / clients.size()) % 5) {
      case 0:
      case 1:
        line(who, in);
        break;
      case 2: {  // write part of what is unsent (possibly mid-line)
        const std::size_t n = std::min<std::size_t>(c.unsent.size(), 1 + in.byte() * 16);
        program_text += "client " + std::to_string(who) + " writes " + std::to_string(n) + " bytes\n";
        c.sent += c.unsent.substr(0, n);
        c.send(c.unsent.substr(0, n));
        c.unsent.erase(0, n);
        break;
      }
      case 3: {
        const std::size_t steps = in.byte() % 16;
        program_text += "the server runs " + std::to_string(steps) + " handlers\n";
        for (std::size_t i = 0; i < steps && context.poll_one() > 0;) ++i;
        context.restart();
        break;
      }
      case 4:
        program_text += "client " + std::to_string(who) + (c.paused ? " reads again\n" : " stops reading\n");
        c.set_reading(c.paused);
        break;
    }
  }
  for (auto& c : clients) {  // what is left is written, and everyone reads
    c->sent += c->unsent;
    c->send(std::move(c->unsent));
    c->unsent.clear();
    c->set_reading(true);
  }
}

void run_echo(input_reader& in, ending how) {
  asio::io_context context(1);
  std::vector<std::unique_ptr<client>> clients;
  clients.push_back(std::make_unique<client>(context));
  local_socket server_end(context);
  asio::local::connect_pair(server_end, clients[0]->socket);
  net_demo::options o;
  o.idle_timeout = std::chrono::seconds(5);
  net_demo::shutdown_signal stopping;
  auto session = coral::spawn(context, net_demo::echo_demo::echo(std::move(server_end), o, stopping));
  clients[0]->set_reading(true);
  run_steps(context, clients, in, [&](std::size_t, input_reader& bytes) {
    const std::string data = bytes.bytes(bytes.byte());
    program_text += "client 0 appends " + std::to_string(data.size()) + " bytes\n";
    clients[0]->unsent += data;
  });
  client& c = *clients[0];
  run_until(
      context, [&] { return c.received.size() >= c.sent.size() && !c.writing; }, "the echo");
  if (how == ending::clients_close) {
    c.close_sending();
  } else {
    stopping.set();
  }
  run_until(
      context, [&] { return session.done() && c.ended; }, "the session to end");
  session.get_result();
  if (c.received != c.sent) violation("the echo differs from what was sent");
}

// Chat lines are tagged "<sender>#<n>:" so that a receiver can tell whose line it got.
struct chat_line {
  std::size_t sender;
  std::size_t number;
};

std::optional<chat_line> parse_tag(std::string_view line) {
  const auto hash = line.find('#'), colon = line.find(':');
  if (hash == std::string_view::npos || colon == std::string_view::npos || hash > colon) return std::nullopt;
  return chat_line{std::stoul(std::string(line.substr(0, hash))),
                   std::stoul(std::string(line.substr(hash + 1, colon - hash - 1)))};
}

void run_chat(input_reader& in, std::size_t client_count, ending how) {
  asio::io_context context(1);
  net_demo::chat_demo::room r;
  net_demo::chat_demo::chat_options o;
  o.write_timeout = std::chrono::seconds(5);
  coral::event stopping;
  std::vector<std::unique_ptr<client>> clients;
  std::vector<coral::job<void>> sessions;
  for (std::size_t i = 0; i < client_count; ++i) {
    clients.push_back(std::make_unique<client>(context));
    local_socket server_end(context);
    asio::local::connect_pair(server_end, clients.back()->socket);
    sessions.push_back(coral::spawn(context, net_demo::chat_demo::session(std::move(server_end), r, stopping, o)));
  }
  context.poll();  // every session has joined the room
  context.restart();
  for (auto& c : clients) c->set_reading(true);

  std::vector<std::vector<std::string>> lines(client_count);  // per sender, every line appended
  std::vector<std::size_t> delivered(client_count);           // per sender, the lines before an over-long one
  std::vector<bool> over_long(client_count);
  run_steps(context, clients, in, [&](std::size_t who, input_reader& bytes) {
    const std::uint8_t size = bytes.byte();
    std::string text = std::to_string(who) + "#" + std::to_string(lines[who].size()) + ":";
    if (size >= 250) {  // long: around the limit
      text.append(net_demo::chat_demo::max_line - 8 + (size - 250) * 3, 'x');
    } else {
      text += bytes.bytes(size);
    }
    for (char& ch : text) {
      if (ch == '\n') ch = ' ';
    }
    text += '\n';
    program_text += "client " + std::to_string(who) + " appends a line of " + std::to_string(text.size()) + " bytes\n";
    if (text.size() > net_demo::chat_demo::max_line) over_long[who] = true;
    if (!over_long[who]) ++delivered[who];
    lines[who].push_back(text);
    clients[who]->unsent += text;
  });

  // A receiver stays in the room unless its own client sent a line over the limit.
  std::size_t expected = 0;
  for (std::size_t s = 0; s < client_count; ++s) expected += delivered[s];
  auto count_lines = [](const std::string& s) {
    return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
  };
  run_until(
      context,
      [&] {
        for (std::size_t i = 0; i < client_count; ++i) {
          if (over_long[i]) continue;
          if (count_lines(clients[i]->received) < expected) return false;
        }
        return true;
      },
      "every line to reach every open session");
  for (auto& c : clients) {
    if (how == ending::clients_close) c->close_sending();
  }
  if (how == ending::shutdown) stopping.set();
  run_until(
      context,
      [&] {
        for (std::size_t i = 0; i < client_count; ++i) {
          if (!sessions[i].done() || !clients[i]->ended) return false;
        }
        return true;
      },
      "every session to end");
  for (auto& s : sessions) s.get_result();

  for (std::size_t i = 0; i < client_count; ++i) {
    const std::string& got = clients[i]->received;
    std::vector<std::size_t> next(client_count);  // per sender, the number of the next line expected
    std::size_t start = 0;
    for (std::size_t end; (end = got.find('\n', start)) != std::string::npos; start = end + 1) {
      const std::string_view line(got.data() + start, end + 1 - start);
      const auto tag = parse_tag(line);
      if (!tag || tag->sender >= client_count || tag->number != next[tag->sender] ||
          tag->number >= delivered[tag->sender] || lines[tag->sender][tag->number] != line) {
        violation("client " + std::to_string(i) + " received a line out of place: " + std::string(line.substr(0, 40)));
      }
      ++next[tag->sender];
    }
    if (!over_long[i]) {
      if (start != got.size()) violation("client " + std::to_string(i) + " received part of a line");
      for (std::size_t s = 0; s < client_count; ++s) {
        if (next[s] != delivered[s]) {
          violation("client " + std::to_string(i) + " received " + std::to_string(next[s]) + " of sender " +
                    std::to_string(s) + "'s " + std::to_string(delivered[s]) + " lines");
        }
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input_reader in{std::string_view(reinterpret_cast<const char*>(data), size)};
  const std::uint8_t first = in.byte();
  const ending how = (first & 2) != 0 ? ending::shutdown : ending::clients_close;
  program_text = how == ending::shutdown ? "(ends with the shutdown)\n" : "(ends with the clients closing)\n";
  if ((first & 1) == 0) {
    program_text = "echo " + program_text;
    run_echo(in, how);
  } else {
    const std::size_t clients = 1 + (first >> 2) % 4;
    program_text = "chat, " + std::to_string(clients) + " clients " + program_text;
    run_chat(in, clients, how);
  }
  static const bool describe_every_program = std::getenv("CORAL_FUZZ_DESCRIBE") != nullptr;
  if (describe_every_program) std::fprintf(stderr, "%s\n", program_text.c_str());
  return 0;
}
