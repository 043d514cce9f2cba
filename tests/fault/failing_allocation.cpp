// The replaced global operator new lives in a translation unit of its own: where its definition is
// visible, g++ mistakes the std::free in operator delete for a mismatched deallocation.
#include "failing_allocation.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local bool counting = false;
thread_local long counted = 0;
thread_local long fail_at = -1;
thread_local bool failed = false;
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

void fail_allocation_at(long k) noexcept {
  counted = 0;
  fail_at = k;
  failed = false;
  counting = true;
}
long stop_failing_allocations() noexcept {
  counting = false;
  return counted;
}
bool allocation_failed() noexcept {
  return failed;
}

}  // namespace coral_test
