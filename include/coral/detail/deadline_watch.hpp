#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "coral/detail/asio.hpp"

namespace coral::detail {

class join_state;
class context_timer;

// with_timeout's timer: one per segment, kept armed from one timeout to the next (the watchdog
// of Asio's timeout example). A timeout that starts needs no timer operation unless its deadline
// is earlier than the wait already pending, and one whose operation ends first needs none at all:
// no lock in the reactor, no cancelled wait to post, no other thread to wake. When the pending
// wait expires it looks at the current deadline: passed, it ends that timeout's join; later, it
// waits again until then; no timeout running, it stops.
//
// Used on its segment's executor (at most one timeout at a time per segment: the segment is
// suspended in it); the pending wait's handler may run on any thread of the context, so what
// they share is guarded by a mutex, never held while anything else runs.
class deadline_watch {
 public:
  explicit deadline_watch(const asio::any_io_executor& executor);
  deadline_watch(const deadline_watch&) = delete;
  deadline_watch& operator=(const deadline_watch&) = delete;
  ~deadline_watch();

  // Around one timeout: `join`'s branch 1 ends (cancelling the operation) when `deadline` passes
  // before end().
  void begin(join_state& join, std::chrono::steady_clock::time_point deadline);
  void end() noexcept;

  // The segment leaves its context: the timer goes now (while the context surely exists); a
  // pending wait finds the watch closed. begin() must not be called afterwards; end() may.
  void close() noexcept;

 private:
  struct shared;
  class expiry;

  void arm(shared& s, std::chrono::steady_clock::time_point at);

  std::shared_ptr<shared> shared_;
  std::unique_ptr<context_timer> timer_;
};

}  // namespace coral::detail
