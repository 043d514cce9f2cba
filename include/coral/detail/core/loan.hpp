#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
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

// A value its owner (a channel) has lent to a receiver, in a box of its own. Whoever holds the box
// may pass it on (moving the box moves no value) until the receiver takes the value, by one move
// (or one copy, of a value others share). If that throws, the value is still whole and goes back
// to its owner (give_back) instead of being destroyed with the exception: so a raced receive loses
// nothing, however many results and tasks the value passes through before it reaches the
// receiving task (see loan).
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

// Whether a result of type T may hold a loan instead of its value: one whose move may throw (a move
// that cannot throw loses nothing).
template <class T>
inline constexpr bool loanable_v =
    !std::is_void_v<T> && !std::is_reference_v<T> && !std::is_nothrow_move_constructible_v<T>;

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
  loan& operator=(loan&&) noexcept = default;

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
  // propagates; the loan is then empty. Otherwise the loan keeps the moved-from value (destroyed
  // with it).
  template <class Make>
  decltype(auto) take_with(Make make) {
    assert(box_);
    try {
      return build<R>(0, make);
    } catch (...) {
      loaned_base::give_back(std::move(box_));
      throw;
    }
  }

 private:
  template <class>
  friend class loan;

  static constexpr std::uint8_t optional_value = 0xff;
  static constexpr std::uint8_t max_depth = 15;

  template <class X, class Make>
  decltype(auto) build(std::uint8_t level, Make& make) {
    if constexpr (is_variant_v<X>) {
      static_assert(std::variant_size_v<X> < optional_value);
      if (level < depth_ && path_[level] != optional_value) {
        return with_index<std::variant_size_v<X>>(path_[level], [&](auto i) -> decltype(auto) {
          constexpr std::size_t I = decltype(i)::value;
          auto in_alternative = [&](auto&&... a) -> decltype(auto) {
            return make(std::in_place_index<I>, std::forward<decltype(a)>(a)...);
          };
          return build<std::variant_alternative_t<I, X>>(static_cast<std::uint8_t>(level + 1), in_alternative);
        });
      }
    } else if constexpr (is_optional_v<X>) {
      if (level < depth_) {
        assert(path_[level] == optional_value);
        return make_from_box<typename X::value_type>(
            [&](auto&& v) -> decltype(auto) { return make(std::in_place, std::forward<decltype(v)>(v)); });
      }
    }
    assert(level == depth_);
    return make_from_box<X>(make);
  }

  // make(v), with the box's value as an rvalue, or as a const lvalue if it is shared (copied).
  template <class V, class Make>
  decltype(auto) make_from_box(Make&& make) {
    auto& box = static_cast<loaned<V>&>(*box_);
    if constexpr (std::is_copy_constructible_v<V>) {
      if (box.shared()) return make(static_cast<const V&>(box.value()));
    }
    return make(std::move(box.value()));
  }

  std::unique_ptr<loaned_base> box_;
  std::array<std::uint8_t, max_depth> path_{};
  std::uint8_t depth_ = 0;
};

}  // namespace coral::detail
