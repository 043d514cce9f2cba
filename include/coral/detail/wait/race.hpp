#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <numeric>
#include <vector>

namespace coral::detail {

// Which branch of a race (when_any, with_timeout) happened. Decided once, by the first branch to
// end, or by a channel before it hands a value to (or takes one from) a branch's waiting
// operation. A hand-off between two races must decide both or neither, so deciding takes a small
// lock (never held while anything else runs) and two decisions lock both, in address order.
class race_decision {
 public:
  static constexpr std::ptrdiff_t undecided = -1;

  // True if `branch` won (now or before).
  bool decide(std::ptrdiff_t branch) noexcept {
    std::lock_guard lock(mutex_);
    return settle(branch);
  }

  std::ptrdiff_t winner() const noexcept { return winner_.load(std::memory_order_acquire); }

 private:
  friend class race_ticket;

  bool settle(std::ptrdiff_t branch) noexcept {
    const auto w = winner_.load(std::memory_order_relaxed);
    if (w == undecided) winner_.store(branch, std::memory_order_release);
    return w == undecided || w == branch;
  }

  std::mutex mutex_;
  std::atomic<std::ptrdiff_t> winner_{undecided};
};

// A branch's right to happen, carried by an operation that takes part in a race; empty for an
// operation that does not (it always may happen).
class race_ticket {
 public:
  race_ticket() noexcept = default;
  race_ticket(race_decision& decision, std::ptrdiff_t branch) noexcept : decision_(&decision), branch_(branch) {}

  explicit operator bool() const noexcept { return decision_ != nullptr; }

  // Whether another branch has won the race (an operation of this one can no longer happen).
  bool lost() const noexcept {
    if (!decision_) return false;
    const auto w = decision_->winner();
    return w != race_decision::undecided && w != branch_;
  }

  // Claims the race for this branch: true if it may happen.
  bool claim() const noexcept { return !decision_ || decision_->decide(branch_); }

  enum class pairing { both, mine_lost, theirs_lost, same_race };

  // A hand-off between this operation and a waiting counterpart: both claimed, or neither.
  // `same_race`: they are two branches of one race, which cannot both happen (skip the
  // counterpart, it may still win).
  pairing claim_with(const race_ticket& theirs) const noexcept {
    if (!theirs.decision_) return claim() ? pairing::both : pairing::mine_lost;
    if (!decision_) return theirs.claim() ? pairing::both : pairing::theirs_lost;
    if (decision_ == theirs.decision_) return pairing::same_race;
    const bool mine_first = std::less<>()(decision_, theirs.decision_);
    std::scoped_lock lock(mine_first ? decision_->mutex_ : theirs.decision_->mutex_,
                          mine_first ? theirs.decision_->mutex_ : decision_->mutex_);
    const auto mine = decision_->winner_.load(std::memory_order_relaxed);
    if (mine != race_decision::undecided && mine != branch_) return pairing::mine_lost;
    const auto other = theirs.decision_->winner_.load(std::memory_order_relaxed);
    if (other != race_decision::undecided && other != theirs.branch_) return pairing::theirs_lost;
    decision_->settle(branch_);
    theirs.decision_->settle(theirs.branch_);
    return pairing::both;
  }

  // Operations that happen together or not at all (the waiters of a barrier's phase): claims the
  // race of every one (true), or of none (false), with `lost[i]` set for each that cannot happen:
  // another branch of its race won, or an earlier operation of `tickets` is a branch of the same
  // race. Empty tickets always may happen. Decisions are locked in address order, as claim_with's.
  static bool claim_together(const std::vector<race_ticket>& tickets, std::vector<char>& lost) {
    lost.assign(tickets.size(), 0);
    std::vector<std::size_t> order(tickets.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const race_decision *da = tickets[a].decision_, *db = tickets[b].decision_;
      return da == db ? a < b : std::less<>()(da, db);
    });
    // (Nothing below throws: the locks are taken and left in one pass each.)
    race_decision* previous = nullptr;
    for (const std::size_t i : order) {
      race_decision* d = tickets[i].decision_;
      if (d && d != previous) d->mutex_.lock();
      previous = d;
    }
    bool all = true;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const race_ticket& t = tickets[order[k]];
      if (!t.decision_) continue;
      // The branch of this race that would win: the decided one, else the first of `tickets` in it.
      std::ptrdiff_t winner = t.decision_->winner_.load(std::memory_order_relaxed);
      if (winner == race_decision::undecided) {
        std::size_t first = k;
        while (first > 0 && tickets[order[first - 1]].decision_ == t.decision_) --first;
        winner = tickets[order[first]].branch_;
      }
      if (t.branch_ != winner) lost[order[k]] = 1, all = false;
    }
    previous = nullptr;
    for (const std::size_t i : order) {
      race_decision* d = tickets[i].decision_;
      if (d && d != previous) {
        if (all) d->settle(tickets[i].branch_);
        d->mutex_.unlock();
      }
      previous = d;
    }
    return all;
  }

 private:
  race_decision* decision_ = nullptr;
  std::ptrdiff_t branch_ = -1;
};

}  // namespace coral::detail
