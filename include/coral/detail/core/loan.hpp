#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace coral::detail {

// g(std::integral_constant<std::size_t, I>{}) for the I in [0, N) that equals `i`. What g returns
// is returned as it is: an object g builds is built once, in the caller's object.
template <std::size_t N, std::size_t I = 0, class G>
decltype(auto) with_index(std::size_t i, G&& g) {
  if constexpr (I + 1 < N) {
    if (i != I) return with_index<N, I + 1>(i, std::forward<G>(g));
  }
  assert(i == I);
  return std::forward<G>(g)(std::integral_constant<std::size_t, I>{});
}

template <class T>
inline constexpr bool is_variant_v = false;
template <class... T>
inline constexpr bool is_variant_v<std::variant<T...>> = true;

template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;

// Runs `done` as its scope ends, unless an exception ends it: once a returned value is made (a
// prvalue is built in its caller's place before the callee's locals go).
template <class Done>
struct once_made {
  Done done;
  int exceptions_before = std::uncaught_exceptions();
  ~once_made() {
    if (std::uncaught_exceptions() == exceptions_before) done();
  }
};
template <class Done>
once_made(Done) -> once_made<Done>;

// A value its owner (a channel) has lent to a receiver, in a box of its own. Whoever holds the box
// may pass it on (moving the box moves no value) until the receiver takes the value, by one move
// (or one copy, of a value others share). If that throws, the value is still whole and goes back
// to its owner (give_back) instead of being destroyed with the exception; so does a value nobody
// took (a join dropped it, or the receiving task's context shut down before the task resumed). So
// a raced receive loses nothing, however many results and tasks the value passes through before
// it reaches the receiving task (see loan).
class loaned_base {
 public:
  virtual ~loaned_base() = default;

  // Returns `box`, whose value its receiver failed to take, to the owner, first in line.
  static void give_back(std::unique_ptr<loaned_base> box) {
    loaned_base& b = *box;
    b.return_to_owner(std::move(box));
  }

 protected:
  virtual void return_to_owner(std::unique_ptr<loaned_base> self) = 0;
};

template <class T>
class loaned : public loaned_base {
 public:
  T& value() noexcept { return *value_; }
  // Whether others hold the value too (a broadcast channel's subscribers): the receiver then takes
  // a copy of it, and the value stays theirs.
  virtual bool shared() const noexcept { return false; }

 protected:
  explicit loaned(T* value) noexcept : value_(value) {}

 private:
  T* value_;
};

// A loaned value that the box holds (a channel's: the box travels with the value from its send).
template <class T>
class loaned_value : public loaned<T> {
 protected:
  explicit loaned_value(T&& value) : loaned<T>(&value_), value_(std::move(value)) {}

 private:
  T value_;
};

// Whether a result of type T may hold a loan instead of its value (an object type).
template <class T>
inline constexpr bool lendable_v = std::is_object_v<T>;

// Whether a channel lends a raced receive's value of type T: one whose move may throw (a value
// moved into the branch's result by a move that cannot throw is only lost if the receiving task
// dies before it takes it).
template <class T>
inline constexpr bool loanable_v = lendable_v<T> && !std::is_nothrow_move_constructible_v<T>;

// How deeply the std::variants and std::optionals of X nest (the longest path a loan of X may need).
template <class X>
struct max_loan_path : std::integral_constant<std::size_t, 0> {};
template <class X>
struct max_loan_path<std::optional<X>> : std::integral_constant<std::size_t, 1> {};
template <class... X>
struct max_loan_path<std::variant<X...>>
    : std::integral_constant<std::size_t, 1 + std::max({std::size_t{0}, max_loan_path<X>::value...})> {};

// A loaned value on its way to a result of type R: R itself, a std::optional R's value, or an
// alternative of the std::variant R (or of a variant nested in it). `path_` says which: the
// alternative taken in each variant, outermost first, and last, possibly, the optional's value.
template <class R>
class loan {
 public:
  // A loan of an R.
  explicit loan(std::unique_ptr<loaned_base> box) noexcept : box_(std::move(box)) {}
  // A loan of the value of a std::optional R (an engaged one).
  static loan of_optional(std::unique_ptr<loaned_base> box) noexcept {
    static_assert(is_optional_v<R>);
    loan l(std::move(box));
    l.path_[l.depth_++] = optional_value;
    return l;
  }
  loan(loan&&) noexcept = default;
  loan& operator=(loan&&) = delete;
  // A value nobody took goes back to its owner. (Only a failed allocation loses it there: it is
  // then destroyed, as nothing could hold it.)
  ~loan() {
    if (!box_) return;
    try {
      loaned_base::give_back(std::move(box_));
    } catch (...) {
    }
  }

  // The same loan, for a std::variant W whose alternative I is R.
  template <class W, std::size_t I>
  loan<W> within() && {
    static_assert(std::is_same_v<std::variant_alternative_t<I, W>, R>);
    static_assert(max_loan_path<W>::value <= max_depth, "coral: results nest too many variants to be passed on");
    loan<W> l(std::move(box_));
    l.path_[0] = static_cast<std::uint8_t>(I);
    for (std::uint8_t k = 0; k < depth_; ++k) l.path_[k + 1] = path_[k];
    l.depth_ = static_cast<std::uint8_t>(depth_ + 1);
    return l;
  }

  // The same loan, for a std::variant W whose first alternatives are those of the variant R.
  template <class W>
  loan<W> widened() && {
    loan<W> l(std::move(box_));
    l.path_ = path_;
    l.depth_ = depth_;
    return l;
  }

  // make(args...), with the arguments that construct an R holding the value: (v), or
  // (std::in_place_index<I>, v), (std::in_place_index<I>, std::in_place_index<J>, v), ...,
  // (std::in_place, v) for an optional, where v is the value as an rvalue. Constructing from them
  // is the one move of the value. If it throws, the value goes back to its owner, and the exception
  // propagates. Either way the loan is empty afterwards (what make built holds the value).
  template <class Make>
  decltype(auto) take_with(Make make) {
    return take_as(make, false);
  }

  // As take_with, but the value stays lent, and goes back to its owner with the loan, until
  // confirm(): for a receiver that makes other things after it, any of which may throw (a
  // when_all's tuple). So the value is copied; an R that cannot be copied is moved, and is then
  // taken at once.
  template <class Make>
  decltype(auto) take_provisionally(Make make) {
    return take_as(make, true);
  }

  // What take_provisionally made is the receiver's: the owner's value goes.
  void confirm() noexcept { box_.reset(); }

 private:
  template <class>
  friend class loan;

  static constexpr std::uint8_t optional_value = 0xff;
  static constexpr std::uint8_t max_depth = 6;  // (a loan is as small as a task's exception)

  template <class Make>
  decltype(auto) take_as(Make& make, bool provisionally) {
    assert(box_);
    try {
      const bool keep = provisionally && copyable();
      once_made release{[&] {
        if (!keep) box_.reset();
      }};
      return build<R>(0, make, provisionally);
    } catch (...) {
      loaned_base::give_back(std::move(box_));
      throw;
    }
  }

  template <class X, class Make>
  decltype(auto) build(std::uint8_t level, Make& make, bool copy) {
    if constexpr (is_variant_v<X>) {
      static_assert(std::variant_size_v<X> < optional_value);
      if (level < depth_ && path_[level] != optional_value) {
        return with_index<std::variant_size_v<X>>(path_[level], [&](auto i) -> decltype(auto) {
          constexpr std::size_t I = decltype(i)::value;
          auto in_alternative = [&](auto&&... a) -> decltype(auto) {
            return make(std::in_place_index<I>, std::forward<decltype(a)>(a)...);
          };
          return build<std::variant_alternative_t<I, X>>(static_cast<std::uint8_t>(level + 1), in_alternative, copy);
        });
      }
    } else if constexpr (is_optional_v<X>) {
      if (level < depth_) {
        assert(path_[level] == optional_value);
        return make_from_box<typename X::value_type>(
            copy, [&](auto&& v) -> decltype(auto) { return make(std::in_place, std::forward<decltype(v)>(v)); });
      }
    }
    assert(level == depth_);
    return make_from_box<X>(copy, make);
  }

  // make(v), with the box's value as an rvalue, or as a const lvalue if it is shared or `copy`.
  template <class V, class Make>
  decltype(auto) make_from_box(bool copy, Make&& make) {
    auto& box = static_cast<loaned<V>&>(*box_);
    if constexpr (std::is_copy_constructible_v<V>) {
      if (copy || box.shared()) return make(static_cast<const V&>(box.value()));
    }
    return make(std::move(box.value()));
  }

  // Whether the value the path leads to can be copied.
  bool copyable() const noexcept { return copyable_at<R>(0); }
  template <class X>
  bool copyable_at(std::uint8_t level) const noexcept {
    if constexpr (is_variant_v<X>) {
      if (level < depth_ && path_[level] != optional_value) {
        return with_index<std::variant_size_v<X>>(path_[level], [&](auto i) {
          return copyable_at<std::variant_alternative_t<decltype(i)::value, X>>(static_cast<std::uint8_t>(level + 1));
        });
      }
    } else if constexpr (is_optional_v<X>) {
      if (level < depth_) return std::is_copy_constructible_v<typename X::value_type>;
    }
    return std::is_copy_constructible_v<X>;
  }

  std::unique_ptr<loaned_base> box_;
  std::array<std::uint8_t, max_depth> path_{};
  std::uint8_t depth_ = 0;
};

}  // namespace coral::detail
