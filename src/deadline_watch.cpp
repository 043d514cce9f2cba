#include "coral/detail/wait/deadline_watch.hpp"

#include <mutex>
#include <utility>

#include "coral/detail/join/join_state.hpp"
#include "coral/detail/wait/sleep_awaiter.hpp"

namespace coral::detail {

using clock = std::chrono::steady_clock;

struct deadline_watch::shared {
  std::mutex mutex;
  deadline_watch* owner;                               // valid while !closed
  counted_ref<join_state> join;                        // the running timeout's, or none
  clock::time_point deadline;                          // the running timeout's
  clock::time_point armed = clock::time_point::max();  // when the pending wait expires; max: none
  unsigned generation = 0;  // of the pending wait: a replaced or closed wait's handler is stale
  bool closed = false;

  explicit shared(deadline_watch* o) : owner(o) {}
};

// The pending wait's handler. It holds the shared part only: the watch may be gone when it runs.
class deadline_watch::expiry {
 public:
  expiry(std::shared_ptr<shared> s, unsigned generation) noexcept : shared_(std::move(s)), generation_(generation) {}

  void operator()(const boost::system::error_code& error) const {
    shared& s = *shared_;
    counted_ref<join_state> expired;
    cancel_cause cause = not_a_deadline;
    {
      std::lock_guard lock(s.mutex);
      if (s.closed || generation_ != s.generation) return;  // replaced by an earlier deadline, or closed
      s.armed = clock::time_point::max();
      if (error || !s.join) return;  // no timeout running: stop until the next one begins
      if (s.deadline > clock::now()) {
        s.owner->arm(s, s.deadline);  // the running timeout began after this wait was armed
        return;
      }
      expired = counted_ref<join_state>(s.join.get());
      cause = deadline_cause(s.deadline);
    }
    expired->end_branch(1, cause);  // (cancels the operation: posts, runs nothing here)
  }

 private:
  std::shared_ptr<shared> shared_;
  unsigned generation_;
};

const char deadline_watch::kind_tag = 0;

deadline_watch& deadline_watch::attach_to(task_segment& segment) {
  auto* made = new deadline_watch(segment.executor());
  segment.attachments().add(*made);
  return *made;
}

deadline_watch::deadline_watch(const asio::any_io_executor& executor)
    : segment_attachment(&kind_tag),
      shared_(std::make_shared<shared>(this)),
      timer_(std::make_unique<context_timer>(executor, clock::time_point::max())) {}

deadline_watch::~deadline_watch() = default;

void deadline_watch::arm(shared& s, clock::time_point at) {
  ++s.generation;
  // (Nothing is armed until the new wait is in: if its allocation fails, the next timeout arms.)
  s.armed = clock::time_point::max();
  timer_->expires_at(at);  // (a wait still pending completes as cancelled: stale)
  timer_->async_wait(expiry(shared_, s.generation));
  s.armed = at;
}

void deadline_watch::begin(join_state& join, clock::time_point deadline) {
  std::lock_guard lock(shared_->mutex);
  // Armed first: if that throws, the watch is as it was. (The expiry takes the lock first.)
  if (deadline < shared_->armed) arm(*shared_, deadline);
  shared_->join = counted_ref<join_state>(&join);
  shared_->deadline = deadline;
}

void deadline_watch::end() noexcept {
  counted_ref<join_state> ended;  // let go of after the lock
  {
    std::lock_guard lock(shared_->mutex);
    ended = std::move(shared_->join);
  }
}

void deadline_watch::leave_context() noexcept {
  {
    counted_ref<join_state> ended;  // let go of after the lock
    std::lock_guard lock(shared_->mutex);
    shared_->closed = true;
    ended = std::move(shared_->join);
  }
  timer_.reset();  // cancels a pending wait, whose handler then finds the watch closed
  delete this;
}

}  // namespace coral::detail
