#pragma once

// HTTPS for the HTTP demo (http_server --tls-cert FILE --tls-key FILE): Asio's OpenSSL streams, in
// Beast's ssl_stream (which coalesces a response's many small buffers into one TLS record).
//   server_tls_context(cert, key)   a TLS 1.2 / 1.3 server context from PEM files
//   tls_session(socket, tls, ...)   the TLS handshake, then the same session as over plain TCP
//   refuse_tls_connection(...)      what a connection past --max-connections gets: the handshake,
//                                   then the refusal (a 503), then the TLS close
// The handshake is the first part of the first request: it has the request timeout (a client
// that stalls it is cut off) and a connection slot, as a slow request does. A session ends TLS
// with a close_notify (close_tls in server.hpp), including the ones the shutdown ends.

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <string>

#include "http_session.hpp"

namespace net_demo {

// A TLS stream can end without the client's close_notify: a truncation, which a session takes as
// the end of stream it stands for.
template <>
struct stream_end<boost::beast::ssl_stream<tcp::socket>> {
  static bool truncated(const boost::system::error_code& error) noexcept {
    return error == asio::ssl::error::stream_truncated;
  }
};

}  // namespace net_demo

namespace net_demo::http_demo {

using https_stream = beast::ssl_stream<tcp::socket>;

// Throws boost::system::system_error naming the file that could not be used.
inline asio::ssl::context server_tls_context(const std::string& certificate_chain, const std::string& private_key) {
  asio::ssl::context tls(asio::ssl::context::tls_server);
  tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                  asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                  asio::ssl::context::single_dh_use);
  auto use = [](const std::string& file, auto load) {
    boost::system::error_code error;
    load(file, error);
    if (error) throw boost::system::system_error(error, "cannot use " + file);
  };
  use(certificate_chain, [&](const std::string& f, auto& e) { tls.use_certificate_chain_file(f, e); });
  use(private_key, [&](const std::string& f, auto& e) { tls.use_private_key_file(f, asio::ssl::context::pem, e); });
  return tls;
}

// The server side of the handshake, within `limit`: false when it failed, took too long or was
// still going when the shutdown began (a handshake is no request in flight: the shutdown's first
// phase ends it, as it ends an idle session); the socket is closed then, and nothing was served.
// The shutdown's second phase goes on as an exception.
inline coral::task<bool> accept_tls(https_stream& stream, std::chrono::milliseconds limit, shutdown_signal& stopping) {
  try {
    auto handshake = [&]() -> coral::task<> {
      co_await stream.async_handshake(asio::ssl::stream_base::server, coral::use_task);
    };
    const auto first = co_await coral::with_timeout(limit, coral::when_any(handshake(), until_set(stopping.event())));
    if (first.index() == 0) co_return true;
  } catch (const coral::timeout_error&) {
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;
    // not TLS, a version or cipher the server does not take, the client's certificate check
  }
  boost::system::error_code ignored;
  beast::get_lowest_layer(stream).close(ignored);
  co_return false;
}

inline coral::task<> tls_session(tcp::socket socket, asio::ssl::context& tls, server_context& server,
                                 routes served = routes::demo) {
  https_stream stream(std::move(socket), tls);
  if (co_await accept_tls(stream, server.request_timeout, server.stopping)) {
    co_await session(std::move(stream), server, served);
  }
}

// What a TLS server's connection past --max-connections gets: `refusal` (a whole response) over
// TLS, all within refusal_linger. Refusals in progress have slots of their own (serve() in
// server.hpp), so the handshakes a full server makes for them are bounded too.
inline coral::task<> refuse_tls_connection(tcp::socket socket, asio::ssl::context& tls, std::string_view refusal) {
  https_stream stream(std::move(socket), tls);
  try {
    co_await coral::with_timeout(refusal_linger, [&]() -> coral::task<> {
      co_await stream.async_handshake(asio::ssl::stream_base::server, coral::use_task);
      co_await write_all(stream, asio::buffer(refusal.data(), refusal.size()));
      co_await stream.async_shutdown(coral::use_task);
    }());
  } catch (const coral::timeout_error&) {
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;  // the shutdown's second phase
  }
}

}  // namespace net_demo::http_demo
