#include "coral/error.hpp"

namespace coral {

namespace {
class category final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "coral"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::channel_closed:
        return "channel closed";
      case errc::timeout:
        return "timed out";
    }
    return "unknown coral error";
  }
};
}  // namespace

const boost::system::error_category& error_category() noexcept {
  static const category instance;
  return instance;
}

}  // namespace coral
