#pragma once

#include <boost/intrusive/slist.hpp>
#include <utility>

namespace coral::detail {

// What a feature built on tasks keeps per segment and reuses from one co_await to the next
// (with_timeout's timer, the threads of the asio::awaitable bridge). The segment knows nothing of
// those features: it holds their attachments and tells them when it leaves its context.
class segment_attachment
    : public boost::intrusive::slist_base_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>> {
 public:
  // Which attachment this is: the address of a tag of its type's own.
  const void* const kind;

  // The segment leaves its context (it ended, or the context shuts down): let go of what belongs
  // to the context. The segment forgets the attachment, which may destroy itself.
  virtual void leave_context() noexcept = 0;
  // The segment's task has ended, on its executor, before the segment leaves its context: what
  // can end the way it would in a running program ends here rather than with the context. The
  // attachment may forget itself (attachments().remove()) and destroy itself.
  virtual void task_ended() noexcept {}

 protected:
  explicit segment_attachment(const void* k) noexcept : kind(k) {}
  ~segment_attachment() = default;
};

// A segment's attachments, used on its executor: a short list with the one found last at its
// front (a task usually uses one of them many times in a row).
class segment_attachments {
 public:
  segment_attachments() noexcept = default;
  segment_attachments(const segment_attachments&) = delete;
  segment_attachments& operator=(const segment_attachments&) = delete;

  // The attachment of `kind`, or none.
  segment_attachment* find(const void* kind) noexcept {
    if (list_.empty()) return nullptr;
    if (list_.front().kind == kind) [[likely]]
      return &list_.front();
    for (auto before = list_.begin(), it = std::next(before); it != list_.end(); before = it++) {
      if (it->kind == kind) {
        segment_attachment& found = *it;
        list_.erase_after(before);
        list_.push_front(found);
        return &found;
      }
    }
    return nullptr;
  }

  void add(segment_attachment& a) noexcept { list_.push_front(a); }

  // Forgets `a` (an attachment that can no longer serve the segment) without telling it.
  void remove(segment_attachment& a) noexcept {
    list_.remove_if([&](const segment_attachment& e) noexcept { return &e == &a; });
  }

  void task_ended() noexcept {
    // (Each may remove and destroy itself: the walk has moved past it first.)
    for (auto it = list_.begin(); it != list_.end();) (*it++).task_ended();
  }

  void leave_context() noexcept {
    list_type leaving;
    leaving.swap(list_);
    while (!leaving.empty()) {
      segment_attachment& a = leaving.front();
      leaving.pop_front();
      a.leave_context();
    }
  }

 private:
  using list_type = boost::intrusive::slist<segment_attachment, boost::intrusive::constant_time_size<false>,
                                            boost::intrusive::linear<true>>;
  list_type list_;
};

}  // namespace coral::detail
