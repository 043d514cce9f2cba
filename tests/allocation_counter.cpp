// The replaced global operator new lives in a translation unit of its own: where its definition is
// visible, g++ mistakes the std::free in operator delete for a mismatched deallocation.
#include "allocation_counter.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

#include "fault/failing_allocation.hpp"

namespace {
thread_local bool counting = false;
thread_local long counted = 0;
thread_local long fail_at = -1;  // (fail_allocation_at)
thread_local bool failed = false;
thread_local bool aligned_counted = false;  // (counted while an allocation is set to fail)
}  // namespace

void* operator new(std::size_t n) {
  if (counting && counted++ == fail_at) {
    failed = true;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return ::operator new(n);
}
// Aligned allocations are counted (and made to fail) by fail_allocation_at, not by allocation_counter.
void* operator new(std::size_t n, std::align_val_t alignment) {
  if (counting && aligned_counted && counted++ == fail_at) {
    failed = true;
    throw std::bad_alloc();
  }
  void* p = nullptr;
  if (posix_memalign(&p, std::max(static_cast<std::size_t>(alignment), sizeof(void*)), n ? n : 1) == 0) return p;
  throw std::bad_alloc();
}
// Asio's recycling allocator takes its memory from std::aligned_alloc, not operator new.
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t n) noexcept {
  if (counting && aligned_counted && counted++ == fail_at) {
    failed = true;
    return nullptr;
  }
  void* p = nullptr;
  return posix_memalign(&p, std::max(alignment, sizeof(void*)), n ? n : 1) == 0 ? p : nullptr;
}
void* operator new[](std::size_t n, std::align_val_t alignment) {
  return ::operator new(n, alignment);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace coral_test {

allocation_counter::allocation_counter() noexcept {
  counted = 0;
  fail_at = -1;
  counting = true;
}
allocation_counter::~allocation_counter() {
  counting = false;
}
long allocation_counter::count() const noexcept {
  return counted;
}

void fail_allocation_at(long k, bool aligned_too) noexcept {
  counted = 0;
  fail_at = k;
  failed = false;
  counting = true;
  aligned_counted = aligned_too;
}
long stop_failing_allocations() noexcept {
  counting = false;
  aligned_counted = false;
  return counted;
}
bool allocation_failed() noexcept {
  return failed;
}

uncounted_allocations::uncounted_allocations() noexcept : was_counting_(std::exchange(counting, false)) {}
uncounted_allocations::~uncounted_allocations() {
  counting = was_counting_;
}

}  // namespace coral_test
