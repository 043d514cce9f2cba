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

// clang's checks of references that a coroutine outlives (opt-in: define CORAL_CORO_LIFETIME_CHECKS,
// with no value or 1, before including coral, or pass -DCORAL_CORO_LIFETIME_CHECKS). With them,
// coral's coroutine types are [[clang::coro_return_type]] and [[clang::coro_lifetimebound]]: a
// task, generator or async_generator kept in a variable or returned while a reference parameter
// of its coroutine is bound to a temporary or a local that dies first is a -Wdangling warning. The
// price is clang's: a function that returns one of these types without being a coroutine is then
// an error unless it is marked CORAL_CORO_WRAPPER (std::function<task<>()> and std::invoke of a
// task factory among them), which is why the checks are not on by default. Other compilers
// ignore the setting. (The test reads an empty definition as 1 and 0 as off.)
#if defined(CORAL_CORO_LIFETIME_CHECKS) && defined(__clang__) && defined(__has_cpp_attribute)
#if (0 - CORAL_CORO_LIFETIME_CHECKS - 1) == 1 || (0 - CORAL_CORO_LIFETIME_CHECKS - 1) != -1
#if __has_cpp_attribute(clang::coro_return_type) && __has_cpp_attribute(clang::coro_lifetimebound) && \
    __has_cpp_attribute(clang::coro_wrapper)
#define CORAL_CORO_RETURN_TYPE [[clang::coro_return_type, clang::coro_lifetimebound]]
#define CORAL_CORO_WRAPPER [[clang::coro_wrapper]]
#if __has_cpp_attribute(clang::coro_disable_lifetimebound)
// coral's own wrappers that keep nothing they are passed by reference (they move or copy it into
// the coroutine they return, as `std::move(g).map(f)` and `generator<int>::from({1, 2})` do): a
// temporary argument is no dangling reference.
#define CORAL_CORO_CONSUMING_WRAPPER [[clang::coro_wrapper, clang::coro_disable_lifetimebound]]
#else
#define CORAL_CORO_CONSUMING_WRAPPER [[clang::coro_wrapper]]
#endif
#endif
#endif
#endif
#ifndef CORAL_CORO_RETURN_TYPE
#define CORAL_CORO_RETURN_TYPE
#define CORAL_CORO_WRAPPER
#define CORAL_CORO_CONSUMING_WRAPPER
#endif
