#pragma once

// coral::latch: count_down(k), wait (also under with_timeout), arrive_and_wait(k), try_wait, from
// a count of 1 to 3.

#include <coral/latch.hpp>
#include <coral/with_timeout.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lincheck.hpp"

namespace lincheck {

struct latch_model {
  std::size_t count = 0;
  std::vector<int> waiters;
  // arrive_and_wait(k) is two steps, count_down(k) in the call, then wait(): one whose count-down
  // reached zero waits for nothing, but a cancellation may still come before its wait begins.
  std::vector<int> ready;

  std::string key() const {
    std::string k = std::to_string(count) + ":";
    for (int w : waiters) k += std::to_string(w) + ",";
    k += "r";
    for (int w : ready) k += std::to_string(w) + ",";
    return k;
  }
  void cancel(int id) {
    std::erase(waiters, id);
    std::erase(ready, id);
  }
  void ready_waiters(std::vector<std::pair<int, result>>& out) const {
    for (int w : ready) out.emplace_back(w, "ok");
  }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<latch_model>>& out) const;
};

struct latch_spec {
  static constexpr const char* name = "latch";
  using object = coral::latch;
  using model = latch_model;
  enum kind { count_down, wait, timed_wait, arrive_and_wait, try_wait, kinds };

  static int random_config(std::mt19937& rng) { return 1 + static_cast<int>(rng() % 3); }
  static std::string describe_config(int config) { return "(" + std::to_string(config) + ")"; }
  static std::unique_ptr<object> make(int config) { return std::make_unique<object>(static_cast<std::size_t>(config)); }
  static model make_model(int config) { return {static_cast<std::size_t>(config), {}, {}}; }

  static op random_op(std::mt19937& rng, int, int&) {
    static constexpr int weights[kinds] = {3, 3, 1, 2, 1};
    int pick = static_cast<int>(rng() % 10);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    return op{k, k == count_down || k == arrive_and_wait ? 1 + static_cast<int>(rng() % 4 == 0) : 0, 0};
  }
  static std::string describe(const op& o) {
    switch (o.kind) {
      case count_down:
        return "count_down(" + std::to_string(o.a) + ")";
      case wait:
        return "wait()";
      case timed_wait:
        return "with_timeout(wait())";
      case arrive_and_wait:
        return "arrive_and_wait(" + std::to_string(o.a) + ")";
      default:
        return "try_wait()";
    }
  }

  // arrive_and_wait(n) is count_down(n), then wait() (as latch.hpp defines it): the count-down
  // happens in the call, also for a task already cancelled.
  static std::optional<result> run_now(object& l, const op& o) {
    switch (o.kind) {
      case count_down:
        l.count_down(static_cast<std::size_t>(o.a));
        return "ok";
      case arrive_and_wait:
        l.count_down(static_cast<std::size_t>(o.a));
        return std::nullopt;
      case try_wait:
        return l.try_wait() ? "true" : "false";
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& l, const op& o) {
    using namespace std::chrono_literals;
    if (o.kind == timed_wait)
      co_await coral::with_timeout(50us, l.wait());
    else
      co_await l.wait();
    co_return "ok";
  }
};

inline void latch_model::invoke(const op& o, int id, bool cancelled, std::vector<step<latch_model>>& out) const {
  using k = latch_spec::kind;
  step<latch_model> s{*this, {}, {}};
  auto& m = s.next;
  const auto n = static_cast<std::size_t>(o.a);
  // arrive_and_wait counts down when it is called, cancelled or not; what is awaited is the wait.
  if (o.kind == k::count_down || o.kind == k::arrive_and_wait) {
    if (n > m.count) {
      s.value = "logic_error";
      out.push_back(std::move(s));
      return;
    }
    m.count -= n;
    if (m.count == 0) {
      for (int w : m.waiters) s.woken.emplace_back(w, "ok");
      m.waiters.clear();
    }
    if (o.kind == k::count_down) s.value = "ok";
  }
  if (o.kind == k::try_wait) s.value = m.count == 0 ? "true" : "false";
  if (o.kind == k::arrive_and_wait && !cancelled) {
    if (m.count == 0)
      m.ready.push_back(id);
    else
      m.waiters.push_back(id);
  } else if (o.kind == k::wait || o.kind == k::timed_wait || o.kind == k::arrive_and_wait) {
    if (cancelled)
      s.value = "aborted";
    else if (m.count == 0)
      s.value = "ok";
    else
      m.waiters.push_back(id);
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
