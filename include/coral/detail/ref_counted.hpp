#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace coral::detail {

// An intrusive reference count, one at construction (the creator's). The last release() calls
// `Derived::destroy_self()`, which frees the object its own way (delete, a handler's allocator);
// Derived declares it private and befriends ref_counted<Derived>.
//
// add_ref() is relaxed: a new reference is made from one the caller already holds. release() is
// acq_rel: whatever an owner did with the object happens before the last owner destroys it.
template <class Derived>
class ref_counted {
 public:
  ref_counted(const ref_counted&) = delete;
  ref_counted& operator=(const ref_counted&) = delete;

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) static_cast<Derived*>(this)->destroy_self();
  }

 protected:
  ref_counted() noexcept = default;
  ~ref_counted() = default;

  // Whether anyone but the caller holds a reference.
  bool shared() const noexcept { return refs_.load(std::memory_order_acquire) > 1; }

 private:
  std::atomic<std::uint32_t> refs_{1};
};

// Calls `Release` on the object it is given (the deleter of a counted_ref).
template <auto Release>
struct release_reference {
  template <class T>
  void operator()(T* object) const noexcept {
    (object->*Release)();
  }
};

// One reference to `T`, counted with `Add` / `Release` (T's add_ref / release unless named), let go
// of when the handle goes. Move-only, as std::unique_ptr, whose interface it has.
template <class T, auto Add = &T::add_ref, auto Release = &T::release>
class counted_ref : public std::unique_ptr<T, release_reference<Release>> {
  using base = std::unique_ptr<T, release_reference<Release>>;

 public:
  counted_ref() noexcept = default;
  // Takes a new reference to `object` (if any).
  explicit counted_ref(T* object) noexcept : base(object) {
    if (object) (object->*Add)();
  }
};

}  // namespace coral::detail
