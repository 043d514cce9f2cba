#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "coral/detail/core/asio.hpp"

namespace coral::detail {

// Memory for the one post that resumes a task from a wait, kept with the wait (in the task's
// frame), so that the waker cannot fail to allocate it. Wakers are mostly noexcept (unlock(),
// close(), release(), a child's end, a guard's destructor): a std::bad_alloc there would end the
// program, and a waker that threw instead would have to undo a hand-over it cannot undo.
//
// Used for the executors whose post takes one allocation, from the allocator it is given, that
// lives exactly until the posted function is about to run or is destroyed: an io_context's and a
// thread_pool's. A strand's post allocates twice with the allocator it is given, and the second
// block (the strand's own runner) can be destroyed after the first at the context's shutdown,
// when the task's frame may be gone; a type-erased executor's post allocates with
// std::allocator whatever it is given. Those post as Asio posts, and may throw std::bad_alloc.
class resumption_memory {
 public:
  resumption_memory() noexcept = default;
  resumption_memory(const resumption_memory&) = delete;
  resumption_memory& operator=(const resumption_memory&) = delete;

  // Posts `f` (which must keep the task's frame, and so this object, until it runs or is
  // destroyed) to `executor` without allocating, where the executor allows it (see above).
  template <class F>
  void post(const asio::any_io_executor& executor, F&& f);

 private:
  template <class T>
  friend class resumption_allocator;

  void* allocate(std::size_t size) noexcept {
    if (used_ || size > capacity) return nullptr;
    used_ = true;
    return bytes_;
  }
  // Compares addresses only: Asio may give the block back while destroying the posted function,
  // which may be what frees the frame holding this object.
  bool owns(const void* p) const noexcept { return p == static_cast<const void*>(bytes_); }

  // An io_context's or a thread_pool's operation holding coral's resumption and this allocator:
  // 48 bytes on 64-bit targets with Boost 1.81 to 1.90 (a larger one comes from operator new).
  static constexpr std::size_t capacity = 64;
  alignas(std::max_align_t) std::byte bytes_[capacity];
  bool used_ = false;
};

// Hands out a resumption_memory's block, once per post; anything else (a larger block, a second
// one) comes from operator new.
template <class T>
class resumption_allocator {
 public:
  using value_type = T;

  explicit resumption_allocator(resumption_memory& memory) noexcept : memory_(&memory) {}
  template <class U>
  resumption_allocator(const resumption_allocator<U>& other) noexcept : memory_(other.memory_) {}

  T* allocate(std::size_t n) {
    if (alignof(T) <= alignof(std::max_align_t)) {
      if (void* p = memory_->allocate(n * sizeof(T))) return static_cast<T*>(p);
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (!memory_->owns(p)) std::allocator<T>().deallocate(p, n);
  }

  template <class U>
  bool operator==(const resumption_allocator<U>& other) const noexcept {
    return memory_ == other.memory_;
  }

 private:
  template <class U>
  friend class resumption_allocator;
  resumption_memory* memory_;
};

template <class F>
void resumption_memory::post(const asio::any_io_executor& executor, F&& f) {
  auto post_with_this = [&](const auto& typed) {
    used_ = false;  // the last post's block was given back before its resumption ran
    asio::prefer(asio::require(typed, asio::execution::blocking.never), asio::execution::relationship.fork,
                 asio::execution::allocator(resumption_allocator<void>(*this)))
        .execute(std::forward<F>(f));
  };
  if (auto* io = executor.target<asio::io_context::executor_type>()) {
    post_with_this(*io);
  } else if (auto* pool = executor.target<asio::thread_pool::executor_type>()) {
    post_with_this(*pool);
  } else {
    asio::post(executor, std::forward<F>(f));
  }
}

}  // namespace coral::detail
