#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include "coral/detail/core/asio.hpp"
#include "coral/detail/core/executors.hpp"

namespace coral::detail {

// Memory for the one post that resumes a task from a wait, kept with the wait (in the task's
// frame), so that the waker cannot fail to allocate it. Wakers are mostly noexcept (unlock(),
// close(), release(), a child's end, a guard's destructor): a std::bad_alloc there would end the
// program, and a waker that threw instead would have to undo a hand-over it cannot undo.
//
// Used for the executors whose post allocates only from the allocator it is given: an
// io_context's and a thread_pool's, and their strands. Their post asks for one block that lives
// until the posted function is about to run or is destroyed: it is this object's own. A strand's
// post may ask for a second one, for the strand's runner when the strand is idle, which can
// outlive the frame at the context's shutdown (Asio's strand service destroys the strand's queue,
// and with it the task, before the scheduler destroys the runner): that block is taken from the
// heap when the task begins to wait (prepare()), where a std::bad_alloc reaches the task, and
// Asio gives it back to the heap. A type-erased executor's post allocates with std::allocator
// whatever it is given: such a wake allocates as Asio's, and may throw.
class resumption_memory {
 public:
  resumption_memory() noexcept = default;
  resumption_memory(const resumption_memory&) = delete;
  resumption_memory& operator=(const resumption_memory&) = delete;
  ~resumption_memory() {
    if (spare_) ::operator delete(spare_);
  }

  // On the task's executor, before the wait can be woken: reserves what a post to an executor of
  // `kind` needs beyond this object. Throws std::bad_alloc, with nothing waiting yet.
  void prepare(executor_target kind) {
    if ((kind == executor_target::io_strand || kind == executor_target::pool_strand) && !spare_) {
      spare_ = ::operator new(spare_capacity);
    }
  }

  // Posts `f` (which must keep the task's frame, and so this object, until it runs or is
  // destroyed) to `executor`, of `kind`, without allocating where the executor allows it (see
  // above).
  template <class F>
  void post(const asio::any_io_executor& executor, executor_target kind, F&& f);

  // Posts `f`, which nothing keeps in memory (a task's start), to `executor`, of `kind`, so that a
  // post that throws has queued nothing: the operation's block comes from the heap before anything
  // is queued, and an idle strand's runner, which Asio asks for after it has queued `f`, from a
  // block reserved before. (An unrecognised executor's strand may still fail after queuing.)
  template <class F>
  static void post_unkept(const asio::any_io_executor& executor, executor_target kind, F&& f) {
    resumption_memory memory;
    memory.prepare(kind);
    memory.used_ = true;  // (`f` may outlive this call: the in-place block is not for it)
    memory.post_typed(executor, kind, std::forward<F>(f));
  }

 private:
  template <class T>
  friend class resumption_allocator;

  void* allocate(std::size_t size) noexcept {
    if (!used_ && size <= capacity) {
      used_ = true;
      return bytes_;
    }
    // (Only a block larger than the in-place one: the runner, asked for after the operation.)
    if (size > capacity && size <= spare_capacity) return std::exchange(spare_, nullptr);
    return nullptr;
  }
  // Compares addresses only: Asio may give the block back while destroying the posted function,
  // which may be what frees the frame holding this object.
  bool owns(const void* p) const noexcept { return p == static_cast<const void*>(bytes_); }

  // The operation holding coral's resumption and this allocator: 48 bytes on 64-bit targets
  // with Boost 1.81 to 1.90. Smaller than a strand's runner, which must never land here.
  static constexpr std::size_t capacity = 56;
  // A strand's runner: 64 to 72 bytes.
  static constexpr std::size_t spare_capacity = 96;
  template <class F>
  void post_typed(const asio::any_io_executor& executor, executor_target kind, F&& f);

  alignas(std::max_align_t) std::byte bytes_[capacity];
  bool used_ = false;
  void* spare_ = nullptr;
};

// Hands out a resumption_memory's blocks, once per post; anything else comes from the heap.
template <class T>
class resumption_allocator {
 public:
  using value_type = T;

  explicit resumption_allocator(resumption_memory& memory) noexcept : memory_(&memory) {}
  template <class U>
  resumption_allocator(const resumption_allocator<U>& other) noexcept : memory_(other.memory_) {}

  T* allocate(std::size_t n) {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return std::allocator<T>().allocate(n);
    } else {
      if (void* p = memory_->allocate(n * sizeof(T))) return static_cast<T*>(p);
      return static_cast<T*>(::operator new(n * sizeof(T)));
    }
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      std::allocator<T>().deallocate(p, n);
    } else if (!memory_->owns(p)) {
      ::operator delete(p);  // (a spare block, of another size than n * sizeof(T))
    }
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
void resumption_memory::post(const asio::any_io_executor& executor, executor_target kind, F&& f) {
  used_ = false;  // the last post's block was given back before its resumption ran
  post_typed(executor, kind, std::forward<F>(f));
}

template <class F>
void resumption_memory::post_typed(const asio::any_io_executor& executor, executor_target kind, F&& f) {
  auto post_with_this = [&](const auto& typed) {
    asio::prefer(asio::require(typed, asio::execution::blocking.never), asio::execution::relationship.fork,
                 asio::execution::allocator(resumption_allocator<void>(*this)))
        .execute(std::forward<F>(f));
  };
  switch (kind) {
    case executor_target::io_context:
      return post_with_this(*executor.target<asio::io_context::executor_type>());
    case executor_target::thread_pool:
      return post_with_this(*executor.target<asio::thread_pool::executor_type>());
    case executor_target::io_strand:
      return post_with_this(*executor.target<io_strand>());
    case executor_target::pool_strand:
      return post_with_this(*executor.target<pool_strand>());
    case executor_target::other:
      break;
  }
  asio::post(executor, std::forward<F>(f));
}

}  // namespace coral::detail
