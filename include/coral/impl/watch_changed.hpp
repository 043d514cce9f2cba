#pragma once

#include <coroutine>
#include <cstdint>
#include <memory>
#include <utility>

#include "coral/detail/sync/sync_awaiters.hpp"
#include "coral/error.hpp"

namespace coral::detail {

// co_await receiver.changed() by a coral task: a flag_awaiter whose flag is the receiver's own,
// set once the watch has a version newer than `*seen` (the one the receiver last read). On success
// it marks the newest version read; a failed wait marks nothing.
class watch_changed_awaiter : public flag_awaiter<watch_versions, wait_kind::watch_changed> {
 public:
  watch_changed_awaiter(std::shared_ptr<watch_versions> state, std::uint64_t& seen) noexcept
      : flag_awaiter(std::move(state), "coral::watch: changed"), seen_(&seen) {}

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> coroutine) {
    return this->suspend_on(coroutine,
                            [this](watch_versions& s, task_segment*) { return s.wait_for_newer(*this, *seen_); });
  }

  // A select's first pass: done if there is a newer version, or the watch is closed.
  bool poll(task_segment& waker) {
    return this->poll_with(waker,
                           [this](watch_versions& s, task_segment*) { return s.poll_newer(*seen_, this->error); });
  }

  void await_resume() {
    this->finish();
    if (this->error == errc::channel_closed) [[unlikely]]
      throw channel_closed("coral::watch: changed() on a closed watch whose last value was read");
    throw_if_failed(this->error, "coral::watch: changed");
    *seen_ = this->state_->version();
  }

 private:
  std::uint64_t* seen_;  // the receiver's
};

}  // namespace coral::detail
