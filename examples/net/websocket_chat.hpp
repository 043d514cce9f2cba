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
// - keep-alive: a client the server has heard nothing from (no message, no ping, pong or close)
//   for a ping interval is pinged; one silent for two intervals is gone: it gets a close frame
//   (1001, "idle") and the connection closes;
// - the shutdown's first phase sends every participant a close frame (1001, going away); the
//   second phase cancels;
// - a close handshake, whoever began it, is over within close_frame_wait: then the socket is
//   closed, whatever the client does;
// - one message is written at a time (no Nagle delay: TCP_NODELAY).
// A handshake with an Origin (browsers send one) other than this server is refused (403): a page
// of another site cannot join the room with its visitor's browser.

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
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

// How long a close handshake may take, whoever began it: the client's close frame in answer to
// the session's, or its end of the connection after either.
inline constexpr auto close_frame_wait = 1s;

// Whether a browser's handshake comes from a page of this server: no Origin (not a browser), or
// exactly one, which is this server as a browser writes it: "http://" or "https://" and the
// request's Host (ASCII case aside).
template <class Request>
bool same_origin(const Request& upgrade) {
  const auto origins = upgrade.count(http::field::origin);
  if (origins == 0) return true;
  if (origins > 1) return false;
  const std::string_view origin = upgrade[http::field::origin];
  const std::string_view host = upgrade[http::field::host];
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.size() > scheme.size() && equal_ignoring_case(origin.substr(0, scheme.size()), scheme))
      return !host.empty() && equal_ignoring_case(origin.substr(scheme.size()), host);
  }
  return false;
}

// One participant's connection, from the upgrade request (already read, with nothing after it) to
// the close. Returns when the session has ended, with the socket closed.
template <class Stream, class Request>
coral::task<> chat_over_websocket(Stream& stream, const Request& upgrade, chat_demo::room& room, coral::event& stopping,
                                  const chat_settings& settings) {
  using clock = std::chrono::steady_clock;
  boost::system::error_code ignored;
  // (A line is one small message: sent at once, not held back for the next one.)
  beast::get_lowest_layer(stream).set_option(tcp::no_delay(true), ignored);
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

  // The session's tasks share its executor, which runs one of them at a time: plain variables.
  auto heard_at = clock::now();  // the client's last message, ping, pong or close
  bool closing = false;          // a close frame has gone out or come in: nothing more is written
  coral::event close_began;
  auto begin_close = [&]() {
    closing = true;
    close_began.set();
  };
  ws.control_callback([&](websocket::frame_type kind, beast::string_view) {
    heard_at = clock::now();
    if (kind == websocket::frame_type::close && !closing) begin_close();
  });

  auto read = [&]() -> coral::task<> {
    beast::flat_buffer message;
    for (;;) {
      auto [error, n] = co_await ws.async_read(message, asio::as_tuple(coral::use_task));
      static_cast<void>(n);
      if (error == websocket::error::closed) co_return;  // the close handshake is over
      if (error) throw boost::system::system_error(error);
      heard_at = clock::now();
      if (!ws.got_text()) {
        if (!closing) {  // (one close at a time: the shutdown's may have begun)
          begin_close();
          co_await ws.async_close(websocket::close_code::unknown_data, coral::use_task);
        }
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
  // Silent for a ping interval: pinged; silent for two (the idle timeout): gone.
  auto keep_alive = [&]() -> coral::task<> {
    for (;;) {
      const auto since = heard_at;
      co_await coral::sleep_until(since + settings.ping_interval);
      if (heard_at != since) continue;
      if (!closing) {
        try {
          co_await coral::with_timeout(settings.room.write_timeout,
                                       [&]() -> coral::task<> { co_await ws.async_ping({}, coral::use_task); }());
        } catch (const boost::system::system_error&) {
          if (!closing) throw;
        }
      }
      co_await coral::sleep_until(since + 2 * settings.ping_interval);
      if (heard_at != since) continue;
      // Gone, as far as the server can tell: a close frame, in case it still reads (close_limit
      // bounds the wait for its answer).
      if (!closing) {
        begin_close();
        co_await ws.async_close(websocket::close_reason(websocket::close_code::going_away, "idle"), coral::use_task);
      }
      co_return;
    }
  };
  // The shutdown's first phase: a close frame, while the read goes on, which sees the client's in
  // answer and ends the session.
  auto close_on_shutdown = [&]() -> coral::task<> {
    co_await stopping.wait();
    if (closing) co_return;  // (a close already under way: the session ends now)
    begin_close();
    co_await ws.async_close(websocket::close_code::going_away, coral::use_task);
  };
  // A close handshake, whoever began it, is over within close_frame_wait (Beast waits for the
  // client's close frame, then for its end of the connection, without a limit of its own).
  auto close_limit = [&]() -> coral::task<> {
    co_await close_began.wait();
    co_await coral::sleep_for(close_frame_wait);
  };
  // When any of these ends the session, the socket is closed first: an operation of Beast's that
  // ignores cancellation (its close's wait for the client's end) then ends too, and when_any's
  // wait for the read is short.
  auto closing_the_socket = [&](coral::task<> part) -> coral::task<> {
    try {
      co_await std::move(part);
    } catch (...) {
      beast::get_lowest_layer(stream).close(ignored);
      throw;
    }
    beast::get_lowest_layer(stream).close(ignored);
  };

  try {
    const auto ended = co_await coral::when_any(
        read(), closing_the_socket(write()), closing_the_socket(keep_alive()), closing_the_socket(close_on_shutdown()),
        closing_the_socket(close_limit()), [&]() -> coral::task<> {
          co_await me->kicked.wait();
          reset_on_close(stream);  // (what the kernel still holds for it goes too)
          beast::get_lowest_layer(stream).close(ignored);
        }());
    static_cast<void>(ended);
  } catch (...) {
    room.leave(me);
    throw;
  }
  room.leave(me);
  beast::get_lowest_layer(stream).close(ignored);
}

}  // namespace net_demo::websocket_chat
