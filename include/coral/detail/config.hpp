#pragma once

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
