#include "coral/error.hpp"

#include <chrono>
#include <string>

namespace coral {

namespace {
class category final : public boost::system::error_category {
 public:
  // Constant-initialised and never destroyed: usable from destructors that run at exit.
  constexpr category() noexcept : boost::system::error_category(0xc0a1'0001'5eed'0001ULL) {}
  const char* name() const noexcept override { return "coral"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::channel_closed:
        return "channel closed";
      case errc::timeout:
        return "timed out";
      case errc::lagged:
        return "fell behind: values were dropped";
    }
    return "unknown coral error";
  }
};
}  // namespace

const boost::system::error_category& error_category() noexcept {
  static constinit const category instance;
  return instance;
}

}  // namespace coral

namespace coral::detail {

namespace {
std::string describe_duration(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const auto count = d.count();
  if (count != 0 && count % 1'000'000'000 == 0) return std::to_string(duration_cast<seconds>(d).count()) + "s";
  if (count % 1'000'000 == 0) return std::to_string(duration_cast<milliseconds>(d).count()) + "ms";
  if (count % 1'000 == 0) return std::to_string(duration_cast<microseconds>(d).count()) + "us";
  return std::to_string(count) + "ns";
}
}  // namespace

void throw_timeout(const std::chrono::steady_clock::duration* timeout, std::chrono::steady_clock::time_point deadline) {
  if (!timeout) throw timeout_error("coral::with_deadline: the operation did not finish by its deadline", deadline);
  throw timeout_error("coral::with_timeout: the operation did not finish within " + describe_duration(*timeout),
                      deadline);
}

}  // namespace coral::detail
