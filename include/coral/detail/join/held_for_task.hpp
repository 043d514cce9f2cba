#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace coral::detail {

// What a join's branch took for the task in the std style (`when_all(m.lock(), work())`: the
// lock), in the form a join's result keeps it until the result reaches a task: the owner, and how
// to give it back. (The owner outlives it, as a mutex outlives its holders.)
struct held_share {
  void* owner = nullptr;
  void (*give_back)(void* owner, std::uint64_t grant, std::size_t weight) noexcept = nullptr;
  std::uint64_t grant = 0;
  std::size_t weight = 0;
};

// The shares a join's result holds: given back when it goes, unless kept (handed to a task, or
// passed on to the result of a join around this one).
class held_shares {
 public:
  held_shares() = default;
  held_shares(held_shares&& other) noexcept : shares_(std::exchange(other.shares_, {})) {}
  held_shares& operator=(held_shares&& other) noexcept {
    if (this != &other) {
      give_back_all();
      shares_ = std::exchange(other.shares_, {});
    }
    return *this;
  }
  ~held_shares() { give_back_all(); }

  // (If the allocation throws, the share is still the caller's.)
  void add(const held_share& share) { shares_.push_back(share); }
  void add(held_shares&& more) {
    shares_.insert(shares_.end(), more.shares_.begin(), more.shares_.end());
    more.shares_.clear();
  }
  // The task has them now: it gives each back by hand.
  void keep() noexcept { shares_.clear(); }

 private:
  void give_back_all() noexcept {
    for (const auto& s : shares_) s.give_back(s.owner, s.grant, s.weight);
    shares_.clear();
  }

  std::vector<held_share> shares_;
};

// A branch's result that owns something the branch took for the task until it is handed over:
// `held.hand_over_holds(nullptr)` hands it to the task (the task gives it back by hand);
// `held.hand_over_holds(&shares)` passes it on to a join's result. Either returns what the task
// gets for the result (nothing for a lock, as awaiting the lock itself yields nothing). A result
// dropped without either gives back what it holds.
template <class T>
concept held_for_task = std::is_object_v<T> && requires(T& held, held_shares* into) {
  typename T::coral_held_for_task;
  held.hand_over_holds(into);
};

template <class T>
struct user_value {
  using type = T;
};
template <held_for_task T>
struct user_value<T> {
  using type = decltype(std::declval<T&>().hand_over_holds(nullptr));
};

// What the awaiting task gets for a result of type T.
template <class T>
using user_value_t = typename user_value<T>::type;

// The result of a join (or of a task built on one) some of whose branches took something for the
// task: the join's value, and what they took.
template <class V>
struct holding {
  using coral_held_for_task = void;
  V value;
  held_shares shares;

  // (All or nothing: if the value's move or the passing on throws, the shares are still here.)
  V hand_over_holds(held_shares* into) {
    V handed = std::move(value);
    if (into) {
      into->add(std::move(shares));
    } else {
      shares.keep();
    }
    return handed;
  }
};

template <>
struct holding<void> {
  using coral_held_for_task = void;
  held_shares shares;

  void hand_over_holds(held_shares* into) {
    if (into) {
      into->add(std::move(shares));
    } else {
      shares.keep();
    }
  }
};

// `holding<V>` where something may be held, V otherwise.
template <bool Holds, class V>
using holding_if = std::conditional_t<Holds, holding<V>, V>;

// A join's result R for a join around it (its coral_join_result, a holding_if): `make(into)` makes
// the value, passing what the branches took for the task into `into`, which is null where nothing
// can be held.
template <class R, class Make>
R holding_if_held(Make make) {
  if constexpr (held_for_task<R>) {
    held_shares shares;
    auto value = make(&shares);
    return R{std::move(value), std::move(shares)};
  } else {
    return make(nullptr);
  }
}

// What a join's awaiter gives the task awaiting it (await_resume) and a join around it
// (coral_join_resume), from Derived::make_value(into) (see holding_if_held). What the branches took
// becomes the task's once the whole value is made, or not at all.
template <class Derived, class V, bool Holds>
class join_value_resume {
 public:
  using coral_join_result = holding_if<Holds, V>;

  V await_resume() {
    if constexpr (Holds) {
      return coral_join_resume().hand_over_holds(nullptr);
    } else {
      return derived().make_value(nullptr);
    }
  }

  coral_join_result coral_join_resume() {
    return holding_if_held<coral_join_result>([this](held_shares* into) { return derived().make_value(into); });
  }

 private:
  Derived& derived() noexcept { return static_cast<Derived&>(*this); }
};

}  // namespace coral::detail
