#pragma once

#include <utility>

namespace coral::detail {

// What a feature built on tasks keeps per segment and reuses from one co_await to the next
// (with_timeout's timer, the threads of the asio::awaitable bridge). The segment knows nothing of
// those features: it holds their attachments and tells them when it leaves its context.
class segment_attachment {
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

 private:
  friend class segment_attachments;
  segment_attachment* next_ = nullptr;
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
    if (!first_ || first_->kind == kind) [[likely]]
      return first_;
    for (segment_attachment** link = &first_->next_; *link; link = &(*link)->next_) {
      if ((*link)->kind == kind) {
        segment_attachment* found = *link;
        *link = found->next_;
        found->next_ = std::exchange(first_, found);
        return found;
      }
    }
    return nullptr;
  }

  void add(segment_attachment& a) noexcept { a.next_ = std::exchange(first_, &a); }

  // Forgets `a` (an attachment that can no longer serve the segment) without telling it.
  void remove(segment_attachment& a) noexcept {
    for (segment_attachment** link = &first_; *link; link = &(*link)->next_) {
      if (*link == &a) {
        *link = a.next_;
        return;
      }
    }
  }

  void task_ended() noexcept {
    for (segment_attachment* a = first_; a;) std::exchange(a, a->next_)->task_ended();
  }

  void leave_context() noexcept {
    for (segment_attachment* a = std::exchange(first_, nullptr); a;) std::exchange(a, a->next_)->leave_context();
  }

 private:
  segment_attachment* first_ = nullptr;
};

}  // namespace coral::detail
