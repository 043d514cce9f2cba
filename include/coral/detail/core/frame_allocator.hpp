#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace coral::detail {

// Coroutine frames are allocated and freed at a high rate (every awaited child task), so each
// thread keeps a few freed frames per size class and hands them out again. A frame freed on
// another thread simply joins that thread's cache. Under AddressSanitizer the cache is off so
// that use-after-free of a frame is still reported.
class frame_cache {
 public:
  static constexpr std::size_t granularity = 64;
  static constexpr std::size_t size_classes = 16;  // frames up to 1 KiB are recycled
  static constexpr std::size_t max_cached_per_class = 32;

  // Trivially constructible and destructible, so that thread-local access needs no guard; the
  // blocks are freed at thread exit by a separate object registered on first caching.
  constexpr frame_cache() noexcept = default;
  frame_cache(const frame_cache&) = delete;
  frame_cache& operator=(const frame_cache&) = delete;

  void release_all() noexcept {
    for (auto*& head : heads_) {
      while (head) ::operator delete(std::exchange(head, head->next));
    }
  }

  void* allocate(std::size_t size) {
    const std::size_t c = size_class(size);
    if (c < size_classes) {
      if (block* b = heads_[c]) {
        heads_[c] = b->next;
        --counts_[c];
        return b;
      }
      return ::operator new((c + 1) * granularity);
    }
    return ::operator new(size);
  }

  void deallocate(void* p, std::size_t size) noexcept {
    const std::size_t c = size_class(size);
    if (c < size_classes && counts_[c] < max_cached_per_class) {
      if (!cleanup_registered_) register_cleanup();
      heads_[c] = new (p) block{heads_[c]};
      ++counts_[c];
      return;
    }
    ::operator delete(p);
  }

 private:
  struct block {
    block* next;
  };
  static constexpr std::size_t size_class(std::size_t size) noexcept { return (size - 1) / granularity; }

  void register_cleanup() noexcept;

  block* heads_[size_classes] = {};
  unsigned counts_[size_classes] = {};
  bool cleanup_registered_ = false;
};

#if defined(__SANITIZE_ADDRESS__)
#define CORAL_NO_FRAME_CACHE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORAL_NO_FRAME_CACHE 1
#endif
#endif

#ifndef CORAL_NO_FRAME_CACHE
inline constinit thread_local frame_cache tls_frame_cache;

inline void frame_cache::register_cleanup() noexcept {
  struct cleanup {
    ~cleanup() { tls_frame_cache.release_all(); }
  };
  static thread_local cleanup on_thread_exit;
  (void)on_thread_exit;
  cleanup_registered_ = true;
}
inline void* allocate_frame(std::size_t size) {
  return tls_frame_cache.allocate(size);
}
inline void deallocate_frame(void* p, std::size_t size) noexcept {
  tls_frame_cache.deallocate(p, size);
}
#else
inline void frame_cache::register_cleanup() noexcept {}
inline void* allocate_frame(std::size_t size) {
  return ::operator new(size);
}
inline void deallocate_frame(void* p, std::size_t) noexcept {
  ::operator delete(p);
}
#endif

}  // namespace coral::detail
