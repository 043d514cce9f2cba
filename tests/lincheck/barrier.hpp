#pragma once

// coral::barrier of 1 to 3 participants, with a completion that counts the phases:
// arrive_and_wait (also under with_timeout), arrive_and_drop, and the completion's count. A wait
// that fails withdraws its arrival.

#include <algorithm>
#include <atomic>
#include <coral/barrier.hpp>
#include <coral/with_timeout.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lincheck.hpp"

namespace lincheck {

struct counting_phases {
  std::atomic<int>* phases;
  void operator()() const noexcept { phases->fetch_add(1); }
};

struct barrier_with_count {
  explicit barrier_with_count(std::size_t participants) : b(participants, counting_phases{&phases}) {}
  std::atomic<int> phases{0};
  coral::barrier<counting_phases> b;
};

struct barrier_model {
  std::size_t left = 0;      // arrivals the phase still waits for
  std::size_t expected = 0;  // participants of the phases to come
  int phases = 0;            // the completion's count
  std::vector<int> waiters;
  // Phases completed whose completion has yet to run, in the call of the arrival that completed
  // it: that arrival and the phase's waiters end once it ran. (The next phase has begun.)
  std::vector<std::vector<int>> completing;

  std::string key() const {
    std::string k = std::to_string(left) + "/" + std::to_string(expected) + "/" + std::to_string(phases) + ":";
    for (int w : waiters) k += std::to_string(w) + ",";
    for (const auto& c : completing) {
      k += "c";
      for (int w : c) k += std::to_string(w) + ",";
    }
    return k;
  }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<barrier_model>>& out) const;

  // A wait that leaves withdraws its arrival; once its phase completed, it cannot leave.
  void interrupt(int id, const result& why, std::vector<step<barrier_model>>& out) const {
    if (std::find(waiters.begin(), waiters.end(), id) != waiters.end()) {
      step<barrier_model> s{*this, why, {}};
      std::erase(s.next.waiters, id);
      ++s.next.left;
      out.push_back(std::move(s));
    } else if (why == "aborted") {
      out.push_back({*this, {}, {}});
    }
  }
  void moves(std::vector<step<barrier_model>>& out) const {
    for (std::size_t i = 0; i < completing.size(); ++i) {
      step<barrier_model> s{*this, {}, {}};
      ++s.next.phases;
      for (int w : completing[i]) s.woken.emplace_back(w, "ok");
      s.next.completing.erase(s.next.completing.begin() + static_cast<std::ptrdiff_t>(i));
      out.push_back(std::move(s));
    }
  }
};

struct barrier_spec {
  static constexpr const char* name = "barrier with a completion";
  using object = barrier_with_count;
  using model = barrier_model;
  enum kind { arrive_and_wait, timed_arrive_and_wait, arrive_and_drop, phases, kinds };

  static int random_config(std::mt19937& rng) { return 1 + static_cast<int>(rng() % 3); }
  static std::string describe_config(int config) { return "(" + std::to_string(config) + ")"; }
  static std::unique_ptr<object> make(int config) { return std::make_unique<object>(static_cast<std::size_t>(config)); }
  static model make_model(int config) {
    return {static_cast<std::size_t>(config), static_cast<std::size_t>(config), 0, {}, {}};
  }

  static op random_op(std::mt19937& rng, int, int&) {
    static constexpr int weights[kinds] = {5, 1, 1, 2};
    int pick = static_cast<int>(rng() % 9);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    return op{k, 0, 0};
  }
  static std::string describe(const op& o) {
    static constexpr const char* names[] = {"arrive_and_wait()", "with_timeout(arrive_and_wait())", "arrive_and_drop()",
                                            "phases (the completion's count)"};
    return names[o.kind];
  }

  static std::optional<result> run_now(object& x, const op& o) {
    switch (o.kind) {
      case arrive_and_drop:
        x.b.arrive_and_drop();
        return "ok";
      case phases:
        return std::to_string(x.phases.load());
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& x, const op& o) {
    using namespace std::chrono_literals;
    if (o.kind == timed_arrive_and_wait)
      co_await coral::with_timeout(50us, x.b.arrive_and_wait());
    else
      co_await x.b.arrive_and_wait();
    co_return "ok";
  }
};

inline void barrier_model::invoke(const op& o, int id, bool cancelled, std::vector<step<barrier_model>>& out) const {
  using k = barrier_spec::kind;
  step<barrier_model> s{*this, {}, {}};
  auto& m = s.next;
  if (o.kind == k::phases) {
    s.value = std::to_string(m.phases);
  } else if (o.kind != k::arrive_and_drop && cancelled) {
    s.value = "aborted";  // (without arriving)
  } else if (m.left == 0) {
    s.value = "logic_error";  // every participant dropped
  } else {
    --m.left;
    if (o.kind == k::arrive_and_drop) --m.expected;
    if (m.left == 0) {  // the phase completes
      m.waiters.push_back(id);
      m.completing.push_back(std::move(m.waiters));
      m.waiters.clear();
      m.left = m.expected;
    } else if (o.kind == k::arrive_and_drop) {
      s.value = "ok";
    } else {
      m.waiters.push_back(id);
    }
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
