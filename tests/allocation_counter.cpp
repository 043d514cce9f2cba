// The replaced global operator new lives in a translation unit of its own: where its definition is
// visible, g++ mistakes the std::free in operator delete for a mismatched deallocation.
#include "allocation_counter.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local bool counting = false;
thread_local long counted = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (counting) ++counted;
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

allocation_counter::allocation_counter() noexcept {
  counted = 0;
  counting = true;
}
allocation_counter::~allocation_counter() {
  counting = false;
}
long allocation_counter::count() const noexcept {
  return counted;
}

}  // namespace coral_test
