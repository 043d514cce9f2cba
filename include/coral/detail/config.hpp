#pragma once

#include <cstdlib>
#include <utility>

// Compiler-specific hints behind one set of names, so that the code reads the same for every
// compiler and a compiler without a hint gets correct code without it.
#if defined(__GNUC__) || defined(__clang__)
#define CORAL_NOINLINE [[gnu::noinline]]
#define CORAL_ALWAYS_INLINE [[gnu::always_inline]]
// Emitted even when nothing refers to it (an object whose only use is to be linked).
#define CORAL_USED [[gnu::used]]
#elif defined(_MSC_VER)
#define CORAL_NOINLINE __declspec(noinline)
#define CORAL_ALWAYS_INLINE [[msvc::forceinline]]
#define CORAL_USED
#else
#define CORAL_NOINLINE
#define CORAL_ALWAYS_INLINE
#define CORAL_USED
#endif

namespace coral::detail {

// std::unreachable() before C++23: tells the optimiser a path is never taken.
[[noreturn]] inline void unreachable() noexcept {
#if defined(__cpp_lib_unreachable)
  std::unreachable();
#elif defined(__GNUC__) || defined(__clang__)
  __builtin_unreachable();
#elif defined(_MSC_VER)
  __assume(false);
#else
  std::abort();
#endif
}

}  // namespace coral::detail
