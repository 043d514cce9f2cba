#pragma once

#include <memory>
#include <utility>

namespace coral::detail {

// What coral keeps for an Asio operation (its handler, a callback) lives in memory from the
// handler's associated allocator, as Asio's own operations do. (Asio's helpers for this are not
// public; Boost's allocate_unique hands back a pointer type of its own, which an object that frees
// itself through its reference count cannot keep.)

// Makes a `T` from `args` in memory from `allocator` (rebound to T); if the constructor throws, the
// memory goes back before the exception leaves.
template <class T, class Allocator, class... Args>
T* create_with_allocator(const Allocator& allocator, Args&&... args) {
  using traits = typename std::allocator_traits<Allocator>::template rebind_traits<T>;
  typename traits::allocator_type a(allocator);
  T* object = traits::allocate(a, 1);
  try {
    traits::construct(a, object, std::forward<Args>(args)...);
  } catch (...) {
    traits::deallocate(a, object, 1);
    throw;
  }
  return object;
}

// Destroys `object` and gives its memory back to `allocator`: a copy, taken before the object (which
// may hold the allocator it came from) goes.
template <class T, class Allocator>
void destroy_with_allocator(Allocator allocator, T* object) noexcept {
  using traits = typename std::allocator_traits<Allocator>::template rebind_traits<T>;
  typename traits::allocator_type a(allocator);
  traits::destroy(a, object);
  traits::deallocate(a, object, 1);
}

}  // namespace coral::detail
