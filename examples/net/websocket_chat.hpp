#pragma once

// The HTTP demo's chat room over WebSocket: GET /chat is a page (chat_page.hpp) whose script joins
// the room at /chat/ws, where the HTTP session hands its connection to chat_over_websocket().
//
// The room and its rules are chat_server's (chat_session.hpp): each participant has an outbox,
// a coral::channel of shared lines that the room fills without ever waiting; a participant whose
// backlog would pass the backlog limit (it fell that far behind), or whose socket accepts nothing
// of a message for the write timeout (it does not read), is dropped. Here a line is a WebSocket
// text message of at most chat_demo::max_line bytes, UTF-8 (Beast checks it). Beast speaks the
// protocol (the handshake, framing, masking, the close handshake, answering pings); the session's
// own tasks do the rest:
// - a longer message is refused with close code 1009 (message too big), a binary one with 1003
//   (the room takes text); either ends the session, as a malformed frame does (Beast's 1002, 1007);
// - keep-alive: a client the server has heard nothing from (no message, no ping or pong) for a
//   ping interval is pinged; one still silent after the next interval is gone: the connection is
//   closed;
// - the shutdown's first phase sends every participant a close frame (1001, going away) and
//   waits, for at most close_frame_wait, for the client's in answer; the second phase cancels.
// A handshake whose Origin (sent by browsers) names another host than Host is refused (403): a
// page of another site cannot join the room with its visitor's browser.

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/url/parse.hpp>
#include <memory>
#include <string>

#include "chat_session.hpp"

namespace net_demo::websocket_chat {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

struct chat_settings {
  chat_demo::chat_options room;                     // backlog limit, write timeout
  std::chrono::milliseconds ping_interval{15'000};  // silence after which the client is pinged
};

// How long a session that sent its close frame waits for the client's.
inline constexpr auto close_frame_wait = 1s;

// Whether a browser's handshake comes from a page of this server: no Origin (not a browser), or
// one whose host and port are the request's Host.
template <class Request>
bool same_origin(const Request& upgrade) {
  if (upgrade.count(http::field::origin) == 0) return true;
  const auto origin = boost::urls::parse_absolute_uri(upgrade[http::field::origin]);
  if (!origin || !origin->has_authority()) return false;
  const std::string_view host(origin->encoded_host_and_port().data(), origin->encoded_host_and_port().size());
  const std::string_view expected = upgrade[http::field::host];
  return host.size() == expected.size() && std::equal(host.begin(), host.end(), expected.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

// One participant's connection, from the upgrade request (already read, with nothing after it) to
// the close. Returns when the session has ended; the stream is closed or may be dropped.
template <class Stream, class Request>
coral::task<> chat_over_websocket(Stream& stream, const Request& upgrade, chat_demo::room& room, coral::event& stopping,
                                  const chat_settings& settings) {
  websocket::stream<Stream&> ws(stream);
  ws.read_message_max(chat_demo::max_line);
  ws.set_option(
      websocket::stream_base::decorator([](websocket::response_type& res) { res.set(http::field::server, "coral"); }));
  // In the room before the handshake is answered: a client that speaks as soon as it has the
  // answer is heard by every participant who had theirs.
  auto me = std::make_shared<chat_demo::participant>(settings.room.backlog_limit);
  room.join(me);
  try {
    co_await coral::with_timeout(settings.room.write_timeout,
                                 [&]() -> coral::task<> { co_await ws.async_accept(upgrade, coral::use_task); }());
  } catch (...) {
    room.leave(me);
    throw;
  }
  // The session's tasks share its executor, which runs one of them at a time: plain flags.
  bool heard = true;     // from the client since the last keep-alive tick
  bool closing = false;  // the session's close frame is on its way: nothing more is written
  ws.control_callback([&heard](websocket::frame_type, beast::string_view) { heard = true; });

  auto read = [&]() -> coral::task<> {
    beast::flat_buffer message;
    for (;;) {
      auto [error, n] = co_await ws.async_read(message, asio::as_tuple(coral::use_task));
      static_cast<void>(n);
      if (error == websocket::error::closed) co_return;  // the close handshake is over
      if (error) throw boost::system::system_error(error);
      heard = true;
      if (!ws.got_text()) {
        closing = true;
        co_await coral::with_timeout(close_frame_wait, [&]() -> coral::task<> {
          co_await ws.async_close(websocket::close_code::unknown_data, coral::use_task);
        }());
        co_return;
      }
      room.deliver(beast::buffers_to_string(message.data()));
      message.consume(message.size());
    }
  };
  auto write = [&]() -> coral::task<> {
    for (;;) {
      const chat_demo::line l = co_await me->outbox.receive();
      const std::size_t cost = chat_demo::cost_of(*l);
      if (closing) continue;  // (the room's lines for a session that is closing are dropped)
      try {
        co_await coral::with_timeout(settings.room.write_timeout, [&]() -> coral::task<> {
          co_await ws.async_write(asio::buffer(*l), coral::use_task);
        }());
      } catch (const coral::timeout_error&) {
        me->drop("it does not read: its socket accepted nothing for " +
                 std::to_string(settings.room.write_timeout.count()) + " ms");
        co_return;  // (the kick ends the session)
      } catch (const boost::system::system_error&) {
        if (!closing) throw;  // (a write the close overtook fails: the session is ending anyway)
      }
      me->backlog.fetch_sub(cost, std::memory_order_relaxed);
    }
  };
  auto keep_alive = [&]() -> coral::task<> {
    for (bool pinged = false;;) {
      co_await coral::sleep_for(settings.ping_interval);
      if (heard || closing) {
        heard = false;
        pinged = false;
        continue;
      }
      if (pinged) co_return;  // silent for two intervals: gone
      pinged = true;
      try {
        co_await coral::with_timeout(settings.room.write_timeout,
                                     [&]() -> coral::task<> { co_await ws.async_ping({}, coral::use_task); }());
      } catch (const boost::system::system_error&) {
        if (!closing) throw;
      }
    }
  };
  // The shutdown's first phase: a close frame, while the read goes on, which sees the client's in
  // answer and ends the session.
  auto close_on_shutdown = [&]() -> coral::task<> {
    co_await stopping.wait();
    closing = true;
    try {
      co_await coral::with_timeout(close_frame_wait, [&]() -> coral::task<> {
        co_await ws.async_close(websocket::close_code::going_away, coral::use_task);
      }());
    } catch (const coral::timeout_error&) {
    }
  };
  auto kicked = [&]() -> coral::task<> { co_await me->kicked.wait(); };

  try {
    const auto ended = co_await coral::when_any(read(), write(), keep_alive(), kicked(), close_on_shutdown());
    if (ended.index() == 3) reset_on_close(stream);  // (what the kernel holds for it goes too)
  } catch (...) {
    room.leave(me);
    throw;
  }
  room.leave(me);
  boost::system::error_code ignored;
  beast::get_lowest_layer(stream).close(ignored);
}

}  // namespace net_demo::websocket_chat
