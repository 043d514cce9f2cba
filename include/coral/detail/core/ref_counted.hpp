#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace coral::detail {

// An intrusive reference count, one at construction (the creator's). The last drop_ref() calls
// `Derived::destroy_self()`, which frees the object its own way (delete, a handler's allocator);
// Derived declares it private and befriends ref_counted<Derived>.
//
// add_ref() is relaxed: a new reference is made from one the caller already holds. drop_ref() is
// acq_rel: whatever an owner did with the object happens before the last owner destroys it.
template <class Derived>
class ref_counted {
 public:
  ref_counted(const ref_counted&) = delete;
  ref_counted& operator=(const ref_counted&) = delete;

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void drop_ref() noexcept {
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

// How a counted_ref counts: with the object's own reference count.
struct object_references {
  template <class T>
  static void add(T& object) noexcept {
    object.add_ref();
  }
  template <class T>
  static void drop(T& object) noexcept {
    object.drop_ref();
  }
};

// Lets go of the reference a counted_ref holds (its deleter).
template <class Count>
struct drop_reference {
  template <class T>
  void operator()(T* object) const noexcept {
    Count::drop(*object);
  }
};

// One reference to `T`, counted by `Count` (T's own count unless named), let go of when the handle
// goes. Move-only, as std::unique_ptr, whose interface it has.
template <class T, class Count = object_references>
class counted_ref : public std::unique_ptr<T, drop_reference<Count>> {
  using base = std::unique_ptr<T, drop_reference<Count>>;

 public:
  counted_ref() noexcept = default;
  // Takes a new reference to `object` (if any).
  explicit counted_ref(T* object) noexcept : base(object) {
    if (object) Count::add(*object);
  }
};

// A handle that takes over the reference the caller holds to `object` (one it just made:
// ref_counted starts with one), adding none. (reset(object) does the same to a handle.)
template <class T, class Count = object_references>
counted_ref<T, Count> adopt(T* object) noexcept {
  counted_ref<T, Count> adopted;
  adopted.reset(object);
  return adopted;
}

}  // namespace coral::detail
