#pragma once

#include <cassert>
#include <exception>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "coral/detail/core/loan.hpp"
#include "coral/detail/join/held_for_task.hpp"
#include "coral/detail/tracking/task_record.hpp"

namespace coral::detail {

// A task's exception and, for a tracked task, its way through coroutines (in the variant's
// alternative, not beside it: a result that holds a value pays nothing for it).
struct task_failure {
  explicit task_failure(std::exception_ptr e) noexcept : exception(std::move(e)) {}
  std::exception_ptr exception;
#if CORAL_TASK_TRACKING
  failure_note_ptr note;
#endif
};

// The outcome of a task: nothing yet, a value (T may be a reference or void), an exception, or a
// loan of the value (a raced receive's, which the joins pass on to the receiving task without
// moving it, and which goes back to its channel if the result is destroyed with it: see loan).
template <class T>
class task_result {
  using stored = std::conditional_t<std::is_void_v<T>, std::monostate,
                                    std::conditional_t<std::is_reference_v<T>, std::add_pointer_t<T>, T>>;
  struct no_loan {};
  using lent = std::conditional_t<lendable_v<T>, loan<T>, no_loan>;

 public:
  task_result() noexcept { std::construct_at(&state_); }
  task_result(const task_result&) = delete;
  task_result& operator=(const task_result&) = delete;
  // Nothing, or a value that needs no destructor (an int, a pointer), is left as it is: the
  // variant's own destructor dispatches through a call even then, on every await of a child.
  ~task_result() {
    if (state_.index() > 1 || !std::is_trivially_destructible_v<stored>) std::destroy_at(&state_);
  }

  template <class... U>
  void set_value(U&&... value) {
    // Set once, on an empty result (co_return). The empty variant holds nothing to destroy, so the
    // value is constructed in its place: emplace() would destroy the previous alternative first,
    // which the optimiser does not always see through on the hottest path.
    assert(state_.index() == 0);
    try {
      if constexpr (std::is_reference_v<T>) {
        std::construct_at(&state_, std::in_place_index<1>, std::addressof(value)...);
      } else {
        std::construct_at(&state_, std::in_place_index<1>, std::forward<U>(value)...);
      }
    } catch (...) {
      std::construct_at(&state_);  // empty again, as before the attempt
      throw;
    }
  }
  void set_exception(std::exception_ptr e) noexcept { state_.template emplace<2>(std::move(e)); }
  void set_loan(loan<T>&& l) noexcept requires lendable_v<T> {
    assert(state_.index() == 0);
    std::construct_at(&state_, std::in_place_index<3>, std::move(l));
  }

  bool has_value() const noexcept { return state_.index() == 1 || state_.index() == 3; }
  bool has_exception() const noexcept { return state_.index() == 2; }
  bool has_loan() const noexcept { return state_.index() == 3; }
  const std::exception_ptr& exception() const noexcept { return std::get_if<2>(&state_)->exception; }
  std::exception_ptr& exception_ref() noexcept { return std::get_if<2>(&state_)->exception; }

  // The loan, moved out: the result is empty again.
  loan<T> take_loan() noexcept requires lendable_v<T> {
    loan<T> l = std::move(*std::get_if<3>(&state_));
    state_.template emplace<0>();
    return l;
  }

  // Moves the value out, or rethrows the exception. A loan's value is taken with its one move.
  T take() {
    auto* value = std::get_if<1>(&state_);
    if (!value) [[unlikely]] {
      if constexpr (lendable_v<T>) {
        if (has_loan()) return take_loan().take_with([](auto&&... a) { return T(std::forward<decltype(a)>(a)...); });
      }
      rethrow_if_exception();
    }
    if constexpr (std::is_void_v<T>) {
      return;
    } else if constexpr (std::is_reference_v<T>) {
      return static_cast<T>(**value);
    } else {
      return std::move(*value);
    }
  }

  // As take(), but an exception is moved out rather than shared: the caller becomes its only owner
  // (exception objects are reference-counted inside libstdc++, out of ThreadSanitizer's sight, so
  // an exception shared by two threads' objects is reported when one of them frees it).
  // The exception's trace goes with it, to the coroutine the caller resumes (a tracked task's).
  T take_or_rethrow() {
    if (has_exception()) rethrow_failure();
    return take();
  }

  // As take_or_rethrow(), but the value goes to make(args...), with the arguments that construct a T
  // holding it (the value as an rvalue, or what loan::take_with passes), so that make can build
  // whatever holds the value (a variant, a pair) with the value's one move. Returns what make does.
  template <class Make>
  decltype(auto) take_or_rethrow_with(Make make) {
    if (state_.index() != 1) [[unlikely]] {
      if constexpr (lendable_v<T>) {
        if (has_loan()) return take_loan().take_with(std::move(make));
      }
      rethrow_failure();
    }
    auto* value = std::get_if<1>(&state_);
    if constexpr (std::is_void_v<T>) {
      return make();
    } else if constexpr (std::is_reference_v<T>) {
      return make(static_cast<T>(**value));
    } else {
      return make(std::move(*value));
    }
  }

  // As take_or_rethrow(), but a loan's value stays lent (and goes back with the result) until
  // confirm_taken(): see loan::take_provisionally.
  T take_provisionally() {
    if constexpr (lendable_v<T>) {
      if (auto* l = std::get_if<3>(&state_)) [[unlikely]]
        return l->take_provisionally([](auto&&... a) { return T(std::forward<decltype(a)>(a)...); });
    }
    return take_or_rethrow();
  }
  void confirm_taken() noexcept {
    if constexpr (lendable_v<T>) {
      if (auto* l = std::get_if<3>(&state_)) l->confirm();
    }
  }

  // Makes a loan an ordinary value, for a result that is read in place (a job's): the value's one
  // move is made here. If it throws, the value goes back to its owner and the result is that
  // exception.
  void settle() noexcept {
    if constexpr (lendable_v<T>) {
      if (!has_loan()) return;
      loan<T> l = take_loan();
      try {
        l.take_with([this](auto&&... a) { this->set_value(std::forward<decltype(a)>(a)...); });
      } catch (...) {
        set_exception(std::current_exception());
      }
    }
  }

  // Destroys what is left (a value nobody took, the moved-from remains of one that was taken, an
  // exception): the result is empty again.
  void clear() noexcept { state_.template emplace<0>(); }

  // The trace of the exception, when a tracked task's coroutine left it here (else null).
  // (After set_exception().)
#if CORAL_TASK_TRACKING
  void set_failure_note(failure_note_ptr note) noexcept {
    std::get_if<2>(&state_)->note = std::move(note);
  }
  const failure_note* note() const noexcept {
    const auto* f = std::get_if<2>(&state_);
    return f ? f->note.get() : nullptr;
  }
  failure_note_ptr take_note() noexcept {
    auto* f = std::get_if<2>(&state_);
    return f ? std::move(f->note) : nullptr;
  }
#else
  static constexpr const failure_note* note() noexcept {
    return nullptr;
  }
  static failure_note_ptr take_note() noexcept {
    return nullptr;
  }
#endif

  // An lvalue of the value (for callbacks that look at it without taking it; a loan is settled
  // first).
  decltype(auto) peek() {
    assert(!has_loan());
    if constexpr (std::is_reference_v<T>) {
      return static_cast<T>(*std::get<1>(state_));
    } else {
      return (std::get<1>(state_));
    }
  }

  void rethrow_if_exception() const {
    if (state_.index() == 2) std::rethrow_exception(std::get_if<2>(&state_)->exception);
    if (state_.index() == 0) throw std::logic_error("coral: the task has no result (it did not complete)");
  }

 private:
  // Rethrows the exception as take_or_rethrow() does, or says there is no result.
  [[noreturn]] void rethrow_failure() {
    if (auto* f = std::get_if<2>(&state_)) {
#if CORAL_TASK_TRACKING
      if (f->note) pass_on_failure_note(std::move(f->note));
#endif
      std::rethrow_exception(std::exchange(f->exception, nullptr));
    }
    throw std::logic_error("coral: the task has no result (it did not complete)");
  }

  // (In a union, so that the destructor above decides whether the variant's runs.)
  union {
    std::variant<std::monostate, stored, task_failure, lent> state_;
  };
};

// Hands a result over to the task awaiting it (rethrowing its exception): what it holds becomes
// the task's.
template <class T>
user_value_t<T> hand_to_caller(task_result<T>& result) {
  if constexpr (held_for_task<T>) {
    return result.take_or_rethrow().hand_over_holds(nullptr);
  } else {
    return result.take_or_rethrow();
  }
}

}  // namespace coral::detail
