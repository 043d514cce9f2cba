#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/task_segment.hpp"

namespace coral::detail {

class join_state;
class context_timer;

// A deadline as a cause of cancellation (see cancel_cause): the earlier, the lower.
inline cancel_cause deadline_cause(std::chrono::steady_clock::time_point deadline) noexcept {
  static_assert(sizeof(std::chrono::steady_clock::rep) <= sizeof(cancel_cause));
  return deadline.time_since_epoch().count();
}

// with_timeout's timer: one per segment (attached to it on its first timeout), kept armed from one timeout to the next
// (the watchdog of Asio's timeout example). A timeout that starts needs no timer operation unless its deadline is
// earlier than the wait already pending, and one whose operation ends first needs none at all: no lock in the reactor,
// no cancelled wait to post, no other thread to wake. When the pending wait expires it looks at the current deadline:
// passed, it ends that timeout's join; later, it waits again until then; no timeout running, it stops.
//
// Used on its segment's executor (at most one timeout at a time per segment: the segment is
// suspended in it); the pending wait's handler may run on any thread of the context, so what
// they share is guarded by a mutex, never held while anything else runs.
class deadline_watch final : public segment_attachment {
 public:
  // On the segment's executor, while it runs: its watch (made on first use).
  static deadline_watch& of(task_segment& segment) {
    if (auto* found = segment.attachments().find(&kind_tag)) [[likely]]
      return static_cast<deadline_watch&>(*found);
    return attach_to(segment);
  }
  // Its watch if it has one still (not once it left its context).
  static deadline_watch* find(task_segment& segment) noexcept {
    return static_cast<deadline_watch*>(segment.attachments().find(&kind_tag));
  }

  // Around one timeout: `join`'s branch 1 ends (cancelling the operation) when `deadline` passes
  // before end().
  void begin(join_state& join, std::chrono::steady_clock::time_point deadline);
  void end() noexcept;

  // The segment leaves its context: the timer goes now (while the context surely exists), and the
  // watch with it; a pending wait finds the watch closed.
  void leave_context() noexcept override;

 private:
  struct shared;
  class expiry;

  static const char kind_tag;
  static deadline_watch& attach_to(task_segment& segment);

  explicit deadline_watch(const asio::any_io_executor& executor);
  deadline_watch(const deadline_watch&) = delete;
  deadline_watch& operator=(const deadline_watch&) = delete;
  ~deadline_watch();

  void arm(shared& s, std::chrono::steady_clock::time_point at);

  std::shared_ptr<shared> shared_;
  std::unique_ptr<context_timer> timer_;
};

}  // namespace coral::detail
