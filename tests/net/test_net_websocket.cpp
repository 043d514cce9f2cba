// The HTTP demo's chat over WebSocket (http_server's /chat and /chat/ws), driven as users drive it:
// WebSocket clients of this test's own (Beast), and the page itself in a real browser (Chromium,
// headless, driven over the DevTools protocol).
//   test_net_websocket --run_test=<scenario> -- <http_server> [--threads N | --io-pool N]
// The browser scenario needs CORAL_CHROMIUM (the browser's program) in the environment; with
// CORAL_CHAT_SCREENSHOT=FILE it also saves a PNG of the second participant's page there.
#define BOOST_TEST_MODULE coral WebSocket chat demo
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <boost/json/src.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "../server_process.hpp"
#include "http_exchange.hpp"

using namespace server_test;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace json = boost::json;

namespace {

// A participant: a WebSocket client of the chat at /chat/ws.
class participant {
 public:
  explicit participant(const tcp::endpoint& server, std::optional<int> receive_buffer = std::nullopt)
      : ws_(connect_to(server, receive_buffer)), host_(host_of(server)) {}

  // The handshake, with an Origin if one is given: its error, and the server's answer in `answer`.
  boost::system::error_code try_handshake(websocket::response_type& answer, const std::string& origin = "") {
    ws_.set_option(websocket::stream_base::decorator([origin](websocket::request_type& req) {
      if (!origin.empty()) req.set(http::field::origin, origin);
    }));
    return complete([&](auto done) { ws_.async_handshake(answer, host_, "/chat/ws", done); }, "the handshake").first;
  }
  void join() {
    websocket::response_type answer;
    const auto error = try_handshake(answer, "http://" + host_);
    BOOST_REQUIRE_MESSAGE(!error, "handshake: " << error.message());
    BOOST_TEST(answer.result_int() == 101);
    BOOST_TEST(answer[http::field::server] == "coral");
  }
  void send(const std::string& text, bool binary = false) {
    ws_.binary(binary);
    const auto [error, n] = complete([&](auto done) { ws_.async_write(asio::buffer(text), done); }, "a send");
    BOOST_REQUIRE_MESSAGE(!error, "send: " << error.message());
  }
  std::string receive() {
    beast::flat_buffer message;
    const auto [error, n] = complete([&](auto done) { ws_.async_read(message, done); }, "a message");
    BOOST_REQUIRE_MESSAGE(!error, "receive: " << error.message());
    BOOST_TEST(ws_.got_text());
    return beast::buffers_to_string(message.data());
  }
  // Reads until the server's close frame (answered by Beast): the code it gave.
  websocket::close_code wait_for_close_frame() {
    for (;;) {
      beast::flat_buffer message;
      const auto [error, n] = complete([&](auto done) { ws_.async_read(message, done); }, "the close frame");
      if (!error) continue;
      BOOST_REQUIRE_MESSAGE(error == websocket::error::closed, "the read ended with " << error.message());
      return static_cast<websocket::close_code>(ws_.reason().code);
    }
  }
  // Counts the pings the server sends while reading (Beast answers each with a pong).
  void count_pings(int& pings) {
    ws_.control_callback([&pings](websocket::frame_type kind, beast::string_view) {
      if (kind == websocket::frame_type::ping) ++pings;
    });
  }
  // Reads (answering pings) until `pings` reaches `count`, then closes.
  void read_until_pings_then_close(const int& pings, int count) {
    beast::flat_buffer message;
    bool done = false;
    boost::system::error_code error;
    ws_.async_read(message, [&](boost::system::error_code e, std::size_t) {
      error = e;
      done = true;
    });
    const auto deadline = clock_type::now() + patience;
    io.restart();
    while (pings < count && !done && clock_type::now() < deadline) io.run_one_until(deadline);
    BOOST_REQUIRE_MESSAGE(!done, "the read ended: " << error.message());
    BOOST_REQUIRE_MESSAGE(pings >= count, "only " << pings << " pings");
    // The read still waits: a close frame of the client's ends it when the server answers.
    bool closed = false;
    ws_.async_close(websocket::close_code::normal, [&](boost::system::error_code e) {
      BOOST_TEST(!e, "close: " << e.message());
      closed = true;
    });
    run_until(closed, "the close");
    run_until(done, "the read that the close ends");
    // (Beast ends a read that a close of its own overtook with operation_aborted.)
    BOOST_TEST((error == websocket::error::closed || error == asio::error::operation_aborted), error.message());
  }
  void close() {
    const auto error =
        complete([&](auto done) { ws_.async_close(websocket::close_code::normal, done); }, "the close").first;
    BOOST_TEST(!error, "close: " << error.message());
  }
  tcp::socket& socket() { return ws_.next_layer(); }

 private:
  websocket::stream<tcp::socket> ws_;
  std::string host_;
};

const std::string upgrade_fields =
    "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n";

}  // namespace

// The page, a request to the WebSocket's path that is not a handshake, and three participants who
// each send five lines: every participant receives all fifteen, each sender's in the order sent.
// One leaves with a clean close; the others go on. Then the shutdown: each remaining participant
// gets a close frame (1001, going away), and the server ends within its grace period.
BOOST_AUTO_TEST_CASE(chat_between_three_participants_and_a_close_frame_at_shutdown) {
  server_process server(server_arguments());
  const auto page = raw_request(server.endpoint(), get(server.endpoint(), "/chat"));
  BOOST_TEST(page.result_int() == 200);
  BOOST_TEST(page[http::field::content_type] == "text/html; charset=utf-8");
  BOOST_TEST(page.body().find("new WebSocket(") != std::string::npos);
  BOOST_TEST(page.body().find("/chat/ws") != std::string::npos);
  const auto not_upgraded = raw_request(server.endpoint(), get(server.endpoint(), "/chat/ws"));
  BOOST_TEST(not_upgraded.result_int() == 426);
  BOOST_TEST(not_upgraded[http::field::upgrade] == "websocket");

  std::vector<std::unique_ptr<participant>> everyone;
  for (int i = 0; i < 3; ++i) {
    everyone.push_back(std::make_unique<participant>(server.endpoint()));
    everyone.back()->join();
  }
  const std::string names[] = {"ann", "bob", "cat"};
  for (int line = 0; line < 5; ++line) {
    for (int who = 0; who < 3; ++who) everyone[who]->send(names[who] + ": line " + std::to_string(line));
  }
  for (auto& p : everyone) {
    std::map<std::string, int> next_line;  // each sender's, in order
    for (int i = 0; i < 15; ++i) {
      const std::string got = p->receive();
      const auto colon = got.find(": line ");
      BOOST_REQUIRE_MESSAGE(colon != std::string::npos, "unexpected: " << got);
      const std::string sender = got.substr(0, colon);
      BOOST_TEST(std::stoi(got.substr(colon + 7)) == next_line[sender]++, got);
    }
    for (const auto& name : names) BOOST_TEST(next_line[name] == 5);
  }
  everyone[0]->close();
  everyone[1]->send("bob: after ann left");
  BOOST_TEST(everyone[1]->receive() == "bob: after ann left");
  BOOST_TEST(everyone[2]->receive() == "bob: after ann left");

  server.signal();
  BOOST_TEST((everyone[1]->wait_for_close_frame() == websocket::close_code::going_away));
  BOOST_TEST((everyone[2]->wait_for_close_frame() == websocket::close_code::going_away));
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos);
  BOOST_TEST(server.output().find("grace period over") == std::string::npos);
}

// What the room does not take: a message over 4096 bytes (close 1009), a binary one (1003), a
// handshake from a page of another origin (403), bytes sent before the handshake was answered
// (400). A message of exactly 4096 bytes is delivered, and a participant listening all along
// hears the others' lines and nothing else.
BOOST_AUTO_TEST_CASE(chat_refuses_long_binary_cross_origin_and_early_messages) {
  server_process server(server_arguments());
  participant listener(server.endpoint());
  listener.join();

  participant longest(server.endpoint());
  longest.join();
  const std::string fits(4096, 'x');
  longest.send(fits);
  BOOST_TEST(longest.receive() == fits);
  BOOST_TEST(listener.receive() == fits);
  longest.send(std::string(4097, 'y'));
  BOOST_TEST((longest.wait_for_close_frame() == websocket::close_code::too_big));

  participant binary(server.endpoint());
  binary.join();
  binary.send("bin: 1", true);
  BOOST_TEST((binary.wait_for_close_frame() == websocket::close_code::unknown_data));

  participant foreign(server.endpoint());
  websocket::response_type answer;
  const auto declined = foreign.try_handshake(answer, "http://elsewhere.example");
  BOOST_TEST((declined == websocket::error::upgrade_declined), declined.message());
  BOOST_TEST(answer.result_int() == 403);
  foreign.socket().close();
  // Origins that merely start like this server, or name it with another scheme, are others; two
  // Origins are refused too. The scheme's case does not matter.
  const std::string self = host_of(server.endpoint());
  for (const std::string& origin : {"http://" + self + ".elsewhere.example", "http://" + self + "x", "ftp://" + self,
                                    "http://" + self + "/", "http://" + self + "@elsewhere.example",
                                    std::string("null"), "http://" + self + "\r\nOrigin: http://elsewhere.example"}) {
    const auto res = raw_request(server.endpoint(),
                                 get(server.endpoint(), "/chat/ws", upgrade_fields + "Origin: " + origin + "\r\n"));
    BOOST_TEST(res.result_int() == 403, origin);
  }
  participant shouting(server.endpoint());
  websocket::response_type upper;
  BOOST_TEST(!shouting.try_handshake(upper, "HTTP://" + self));
  BOOST_TEST(upper.result_int() == 101);
  shouting.close();

  // A text frame (empty, masked) in the same write as the handshake.
  const auto early = raw_request(
      server.endpoint(), get(server.endpoint(), "/chat/ws", upgrade_fields) + std::string("\x81\x80\0\0\0\0", 6));
  BOOST_TEST(early.result_int() == 400);
  BOOST_TEST(!early.keep_alive());

  listener.send("listener: still here");
  BOOST_TEST(listener.receive() == "listener: still here");
  BOOST_TEST(server.interrupt() == 0);
}

// Keep-alive (idle timeout 400 ms: a ping after 200 ms of silence): a participant that answers
// pings stays through several of them; one that never reads, and so never answers, is closed.
BOOST_AUTO_TEST_CASE(chat_keep_alive_pings_and_closes_a_silent_participant) {
  server_process server(server_arguments({"--idle-timeout-ms", "400"}));
  participant silent(server.endpoint());
  silent.join();
  participant answering(server.endpoint());
  answering.join();
  int pings = 0;
  answering.count_pings(pings);
  answering.read_until_pings_then_close(pings, 3);  // (1.2 s or more: the silent one's two intervals are long over)
  // The silent participant got one ping (unanswered), then a close frame (1001, "idle"), then the
  // end of the connection.
  std::string got;
  char chunk[256];
  for (;;) {
    const auto [error, n] = complete([&](auto done) { silent.socket().async_read_some(asio::buffer(chunk), done); },
                                     "the silent participant's bytes");
    got.append(chunk, n);
    if (error) {
      BOOST_TEST((error == asio::error::eof), error.message());
      break;
    }
  }
  BOOST_TEST((got == std::string("\x89\x00\x88\x06\x03\xe9idle", 10)), got.size() << " bytes");
  participant later(server.endpoint());
  later.join();
  later.send("later: hello");
  BOOST_TEST(later.receive() == "later: hello");
  BOOST_TEST(server.interrupt() == 0);
}

// Frames as a hostile client writes them (masked with a zero key, so that the payload reads as sent).
std::string client_frame(unsigned char opcode, const std::string& payload) {
  std::string f;
  f += static_cast<char>(0x80 | opcode);
  f += static_cast<char>(0x80 | payload.size());  // (payloads under 126 bytes)
  f += std::string(4, '\0');
  return f + payload;
}

// Every close ends in bounded time, whoever begins it and whatever the client does next: a client
// that sends a close frame and keeps its connection open; one whose binary message is answered with
// a close it never answers, with the shutdown arriving meanwhile; and one that floods the room
// when the shutdown begins and stays connected. The server exits 0 within its grace period.
BOOST_AUTO_TEST_CASE(chat_every_close_ends_whatever_the_client_does) {
  server_process server(server_arguments());
  const auto ep = server.endpoint();
  participant lingering(ep);
  lingering.join();
  write_all(lingering.socket(), client_frame(0x8, std::string("\x03\xe8", 2)));  // close 1000, then nothing
  const auto lingered = wait_for_close(lingering.socket());                      // (the server's close frame first)
  BOOST_TEST((lingered == asio::error::eof || lingered == asio::error::connection_reset), lingered.message());

  participant binary(ep);
  binary.join();
  write_all(binary.socket(), client_frame(0x2, "bin"));
  BOOST_TEST(read_exactly(binary.socket(), 4) == std::string("\x88\x02\x03\xeb", 4));  // 1003, never answered
  // Floods (8 MiB of short messages) and reads what comes back, as long as the connection lasts.
  participant flooding(ep);
  flooding.join();
  auto flood = std::make_shared<std::string>();
  while (flood->size() < 8 * 1024 * 1024) *flood += client_frame(0x1, "flood: " + std::to_string(flood->size()));
  asio::async_write(flooding.socket(), asio::buffer(*flood), [flood](boost::system::error_code, std::size_t) {});
  auto sink = std::make_shared<std::array<char, 65536>>();
  auto reading = std::make_shared<std::function<void()>>();
  *reading = [&socket = flooding.socket(), sink, weak = std::weak_ptr(reading)] {
    socket.async_read_some(asio::buffer(*sink), [weak](boost::system::error_code e, std::size_t) {
      if (auto next = weak.lock(); next && !e) (*next)();
    });
  };
  (*reading)();

  server.signal();
  BOOST_TEST(server.exit_status() == 0);
  BOOST_TEST(server.output().find("all sessions ended") != std::string::npos);
  BOOST_TEST(server.output().find("grace period over") == std::string::npos, server.output());
}

// A participant that does not read while another talks: it is dropped (its backlog passes the
// limit, or its socket accepts nothing for the write timeout), and the talker, who reads, goes on.
BOOST_AUTO_TEST_CASE(chat_a_participant_that_does_not_read_is_dropped) {
  server_process server(server_arguments({"--write-timeout-ms", "1000"}));
  participant deaf(server.endpoint(), 4096);
  deaf.join();
  participant talker(server.endpoint());
  talker.join();
  const std::string line = "talker: " + pattern(4000, 1);
  int sent = 0;
  for (; sent < 20'000 && server.output().find("dropped a client") == std::string::npos; ++sent) {
    talker.send(line);
    BOOST_REQUIRE(talker.receive() == line);
  }
  BOOST_TEST_MESSAGE(sent << " lines sent before the drop");
  server.wait_for_output("dropped a client");
  const auto closed = wait_for_close(deaf.socket());
  BOOST_TEST((closed == asio::error::eof || closed == asio::error::connection_reset), closed.message());
  talker.send("talker: done");
  BOOST_TEST(talker.receive() == "talker: done");
  BOOST_TEST(server.interrupt() == 0);
}

namespace {

// A headless Chromium with its DevTools protocol on a free port, in a profile of its own; closed
// (and its profile removed) at the end.
class browser {
 public:
  browser() {
    const char* program = std::getenv("CORAL_CHROMIUM");
    BOOST_REQUIRE_MESSAGE(program != nullptr && *program != '\0', "CORAL_CHROMIUM names no browser");
    char name[] = "/tmp/coral-chromium-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(name) != nullptr);
    profile_ = name;
    std::vector<std::string> arguments{program,
                                       "--headless",
                                       "--no-sandbox",
                                       "--disable-gpu",
                                       "--disable-quic",
                                       "--no-first-run",
                                       "--disable-background-networking",
                                       "--disable-component-update",
                                       "--disable-sync",
                                       "--remote-debugging-port=0",
                                       "--user-data-dir=" + profile_.string(),
                                       "about:blank"};
    const auto [pid, output] = start_program(std::move(arguments), {STDERR_FILENO});
    pid_ = pid;
    output_.emplace(io, output);
    // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
    const std::string prefix = "DevTools listening on ";
    std::string said;
    for (;;) {
      const auto [error, n] =
          complete([&](auto done) { asio::async_read_until(*output_, asio::dynamic_buffer(unread_), '\n', done); },
                   "the browser's DevTools address");
      BOOST_REQUIRE_MESSAGE(!error, "the browser ended: " << said << unread_);
      const std::string line = unread_.substr(0, n - 1);
      unread_.erase(0, n);
      said += line + "\n";
      if (line.rfind(prefix, 0) == 0) {
        address_ = line.substr(prefix.size());
        break;
      }
    }
  }
  ~browser() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    std::error_code ignored;
    std::filesystem::remove_all(profile_, ignored);
  }
  const std::string& address() const { return address_; }

 private:
  pid_t pid_ = -1;
  std::filesystem::path profile_;
  std::optional<asio::posix::stream_descriptor> output_;
  std::string unread_;
  std::string address_;
};

// A DevTools protocol client: commands to the browser, or to a page's session.
class devtools {
 public:
  explicit devtools(const std::string& address) : ws_(io) {
    // ws://127.0.0.1:PORT/devtools/browser/ID
    const auto rest = address.substr(address.find("//") + 2);
    const auto host = rest.substr(0, rest.find('/'));
    const auto port = static_cast<unsigned short>(std::stoi(host.substr(host.find(':') + 1)));
    ws_.next_layer() = connect_to(tcp::endpoint(asio::ip::address_v4::loopback(), port));
    const auto error =
        complete([&](auto done) { ws_.async_handshake(host, rest.substr(rest.find('/')), done); }, "DevTools").first;
    BOOST_REQUIRE_MESSAGE(!error, "DevTools handshake: " << error.message());
  }

  // The result of `method` (events that come first are skipped).
  json::object call(const std::string& method, json::object params = {}, const std::string& session = "") {
    const std::int64_t id = next_id_++;
    json::object command{{"id", id}, {"method", method}, {"params", std::move(params)}};
    if (!session.empty()) command["sessionId"] = session;
    const std::string text = json::serialize(command);
    const auto written = complete([&](auto done) { ws_.async_write(asio::buffer(text), done); }, method.c_str()).first;
    BOOST_REQUIRE_MESSAGE(!written, method << ": " << written.message());
    for (;;) {
      beast::flat_buffer message;
      const auto [error, n] = complete([&](auto done) { ws_.async_read(message, done); }, method.c_str());
      BOOST_REQUIRE_MESSAGE(!error, method << ": " << error.message());
      const std::string text = beast::buffers_to_string(message.data());
      auto reply = json::parse(text).as_object();
      if (!reply.contains("id") || reply.at("id").to_number<std::int64_t>() != id) continue;
      BOOST_REQUIRE_MESSAGE(!reply.contains("error"), method << ": " << text);
      return reply.at("result").as_object();
    }
  }

  // A new page at `url`: its session.
  std::string open(const std::string& url) {
    const auto target = call("Target.createTarget", {{"url", "about:blank"}});
    const auto attached = call("Target.attachToTarget", {{"targetId", target.at("targetId")}, {"flatten", true}});
    std::string session(attached.at("sessionId").as_string());
    call("Page.enable", {}, session);
    call("Page.navigate", {{"url", url}}, session);
    return session;
  }

  // Evaluates `expression` in the page (awaiting it if it is a promise): its value.
  json::value evaluate(const std::string& session, const std::string& expression) {
    auto result = call("Runtime.evaluate",
                       {{"expression", expression}, {"awaitPromise", true}, {"returnByValue", true}}, session);
    BOOST_REQUIRE_MESSAGE(!result.contains("exceptionDetails"), "the page threw: " << json::serialize(result));
    const auto& value = result.at("result").as_object();
    return value.contains("value") ? value.at("value") : json::value();
  }

  // Waits, in the page, until `condition` (a JavaScript expression) holds: checked at each change
  // of the document, for at most 20 s.
  void wait_until(const std::string& session, const std::string& condition) {
    evaluate(session,
             "new Promise((resolve, reject) => {"
             "  const holds = () => { try { return " +
                 condition +
                 "; } catch (e) { return false; } };"
                 "  if (holds()) return resolve(true);"
                 "  const seen = new MutationObserver(() => { if (holds()) { seen.disconnect(); resolve(true); } });"
                 "  seen.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});"
                 "  setTimeout(() => reject(new Error('not within 20 s: ' + " +
                 json::serialize(json::string(condition)) +
                 ")), 20000);"
                 "})");
  }

 private:
  websocket::stream<tcp::socket> ws_;
  std::int64_t next_id_ = 1;
};

// The lines a page shows.
std::string lines_shown(devtools& chrome, const std::string& page) {
  return std::string(chrome.evaluate(page, "document.getElementById('lines').innerText").as_string());
}

// Types `text` into the page's message box and sends it, as a user does.
void say(devtools& chrome, const std::string& page, const std::string& text) {
  chrome.evaluate(page, "document.getElementById('text').value = " + json::serialize(json::string(text)) +
                            "; document.getElementById('say').requestSubmit(); true");
}

}  // namespace

// The page in a real browser: Chromium opens /chat twice (ann and bob); ann types a line and sends
// it, and bob's page shows it; bob answers, and ann's page shows that; a participant of this
// test's own (a Beast client) hears both and is heard by both.
BOOST_AUTO_TEST_CASE(chat_page_in_a_real_browser) {
  server_process server(server_arguments());
  browser chromium;
  devtools chrome(chromium.address());
  const std::string base = "http://" + host_of(server.endpoint()) + "/chat?name=";
  const std::string ann = chrome.open(base + "ann");
  const std::string bob = chrome.open(base + "bob");
  const std::string open = "document.body.dataset.state === 'open'";
  chrome.wait_until(ann, open);
  chrome.wait_until(bob, open);
  participant cat(server.endpoint());
  cat.join();

  say(chrome, ann, "hello from a real browser");
  chrome.wait_until(bob, "document.getElementById('lines').innerText.includes('ann: hello from a real browser')");
  BOOST_TEST(cat.receive() == "ann: hello from a real browser");
  say(chrome, bob, "hi ann, this came through coral");
  chrome.wait_until(ann, "document.getElementById('lines').innerText.includes('bob: hi ann, this came through coral')");
  BOOST_TEST(cat.receive() == "bob: hi ann, this came through coral");
  cat.send("cat: and a Beast client is here too");
  const std::string last = "document.getElementById('lines').innerText.includes('cat: and a Beast client is here too')";
  chrome.wait_until(ann, last);
  chrome.wait_until(bob, last);
  BOOST_TEST(cat.receive() == "cat: and a Beast client is here too");
  const std::string expected =
      "ann: hello from a real browser\nbob: hi ann, this came through coral\ncat: and a Beast client is here too";
  BOOST_TEST(lines_shown(chrome, ann) == expected);
  BOOST_TEST(lines_shown(chrome, bob) == expected);
  // bob's own lines are shown as his.
  BOOST_TEST(chrome.evaluate(bob, "document.querySelectorAll('#lines li.own').length").to_number<int>() == 1);

  if (const char* file = std::getenv("CORAL_CHAT_SCREENSHOT")) {
    chrome.call("Emulation.setDeviceMetricsOverride",
                {{"width", 720}, {"height", 560}, {"deviceScaleFactor", 1}, {"mobile", false}}, bob);
    const auto shot = chrome.call("Page.captureScreenshot", {{"format", "png"}}, bob);
    const std::string encoded(shot.at("data").as_string());
    std::string png(beast::detail::base64::decoded_size(encoded.size()), '\0');
    png.resize(beast::detail::base64::decode(png.data(), encoded.data(), encoded.size()).first);
    std::ofstream(file, std::ios::binary) << png;
    BOOST_TEST_MESSAGE("screenshot: " << file);
  }

  // The shutdown closes the pages' WebSockets with a close frame: each page says so.
  server.signal();
  chrome.wait_until(ann, "document.body.dataset.state === 'closed'");
  BOOST_TEST(std::string(chrome.evaluate(ann, "document.getElementById('state').textContent").as_string()) ==
             "disconnected (1001)");
  BOOST_TEST((cat.wait_for_close_frame() == websocket::close_code::going_away));
  BOOST_TEST(server.exit_status() == 0);
}
