#pragma once

#include <coroutine>
#include <utility>

namespace coral::detail {

// Destroys a coroutine frame the plain way.
struct destroy_coroutine {
  void operator()(std::coroutine_handle<> frame) const noexcept { frame.destroy(); }
};

// Owns a coroutine frame that is not running (not started yet, or finished): move-only, and the
// frame is destroyed with `Destroy` when its owner goes. What task and async_generator hold.
template <class Promise, class Destroy = destroy_coroutine>
class unique_coroutine {
 public:
  using handle_type = std::coroutine_handle<Promise>;

  unique_coroutine() noexcept = default;
  explicit unique_coroutine(handle_type frame) noexcept : frame_(frame) {}
  unique_coroutine(unique_coroutine&& other) noexcept : frame_(std::exchange(other.frame_, nullptr)) {}
  unique_coroutine& operator=(unique_coroutine&& other) noexcept {
    if (this != &other) {
      reset();
      frame_ = std::exchange(other.frame_, nullptr);
    }
    return *this;
  }
  ~unique_coroutine() { reset(); }

  explicit operator bool() const noexcept { return static_cast<bool>(frame_); }
  handle_type get() const noexcept { return frame_; }
  Promise& promise() const noexcept { return frame_.promise(); }
  bool done() const noexcept { return frame_.done(); }

  // Gives up ownership (the caller runs or destroys the frame).
  handle_type release() noexcept { return std::exchange(frame_, nullptr); }
  void reset() noexcept {
    if (auto frame = std::exchange(frame_, nullptr)) Destroy{}(frame);
  }

 private:
  handle_type frame_;
};

}  // namespace coral::detail
