#pragma once

// coral's errors. Each exception derives from std::runtime_error (through system_error), so catch
// (std::exception&) catches them. Cancellation is not an error of coral's: it is
// boost::system::system_error(asio::error::operation_aborted), as in Asio.

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>

namespace coral {

// coral's error codes, in the "coral" category (for Asio-style async_* operations).
enum class errc {
  channel_closed = 1,  // the channel was closed (or destroyed) before the operation could complete
  timeout = 2,         // the operation did not finish in time
  lagged = 3,          // a broadcast subscriber fell behind, and values it had not received were dropped
};

const boost::system::error_category& error_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
  return boost::system::error_code(static_cast<int>(e), error_category());
}

// Thrown by channel operations on a closed channel. A boost::system::system_error, and so a
// std::runtime_error, whose code() is errc::channel_closed.
// Thread safety: distinct objects: safe. Shared objects: safe (const members only).
class channel_closed : public boost::system::system_error {
 public:
  explicit channel_closed(const std::string& what) : system_error(make_error_code(errc::channel_closed), what) {}
};

// Thrown when an operation did not finish in time; code() is errc::timeout. deadline() is the
// deadline that passed (with_timeout's start plus its duration, or with_deadline's time point);
// time_point::min() if the thrower gave none.
// Thread safety: distinct objects: safe. Shared objects: safe (const members only).
class timeout_error : public boost::system::system_error {
 public:
  explicit timeout_error(const std::string& what,
                         std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::min())
      : system_error(make_error_code(errc::timeout), what), deadline_(deadline) {}

  std::chrono::steady_clock::time_point deadline() const noexcept { return deadline_; }

 private:
  std::chrono::steady_clock::time_point deadline_;
};

// Thrown by a broadcast_channel subscriber's receive when values it had not received were dropped
// (overflow::drop_oldest); code() is errc::lagged. missed() is how many it lost. The subscriber
// then continues with the oldest value still buffered.
// Thread safety: distinct objects: safe. Shared objects: safe (const members only).
class lagged : public boost::system::system_error {
 public:
  explicit lagged(std::uint64_t missed)
      : system_error(make_error_code(errc::lagged), "coral::broadcast_channel: the subscriber fell behind and missed " +
                                                        std::to_string(missed) + (missed == 1 ? " value" : " values")),
        missed_(missed) {}

  std::uint64_t missed() const noexcept { return missed_; }

 private:
  std::uint64_t missed_;
};

}  // namespace coral

namespace boost::system {
template <>
struct is_error_code_enum<coral::errc> : std::true_type {};
}  // namespace boost::system
