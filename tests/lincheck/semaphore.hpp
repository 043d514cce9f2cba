#pragma once

// coral::semaphore in the std style: acquire (also under with_timeout), try_acquire, release(n),
// available, from 0, 1 or 2 permits.

#include <coral/semaphore.hpp>
#include <coral/with_timeout.hpp>
#include <deque>
#include <memory>
#include <random>
#include <string>

#include "lincheck.hpp"

namespace lincheck {

struct semaphore_model {
  std::size_t permits = 0;
  std::deque<int> waiters;

  std::string key() const {
    std::string k = std::to_string(permits) + ":";
    for (int w : waiters) k += std::to_string(w) + ",";
    return k;
  }
  void cancel(int id) { std::erase(waiters, id); }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<semaphore_model>>& out) const;
};

struct semaphore_spec {
  static constexpr const char* name = "semaphore";
  using object = coral::semaphore;
  using model = semaphore_model;
  enum kind { acquire, timed_acquire, try_acquire, release, available, kinds };

  static int random_config(std::mt19937& rng) { return static_cast<int>(rng() % 3); }
  static std::string describe_config(int config) { return "(" + std::to_string(config) + ")"; }
  static std::unique_ptr<object> make(int config) { return std::make_unique<object>(static_cast<std::size_t>(config)); }
  static model make_model(int config) { return {static_cast<std::size_t>(config), {}}; }

  static op random_op(std::mt19937& rng, int, int&) {
    static constexpr int weights[kinds] = {3, 1, 1, 3, 1};
    int pick = static_cast<int>(rng() % 9);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    return op{k, k == release ? 1 + static_cast<int>(rng() % 2) : 0, 0};
  }
  static std::string describe(const op& o) {
    static constexpr const char* names[] = {"acquire()", "with_timeout(acquire())", "try_acquire()", "release",
                                            "available()"};
    return o.kind == release ? "release(" + std::to_string(o.a) + ")" : names[o.kind];
  }

  static std::optional<result> run_now(object& s, const op& o) {
    switch (o.kind) {
      case try_acquire:
        return s.try_acquire() ? "true" : "false";
      case release:
        s.release(static_cast<std::size_t>(o.a));
        return "ok";
      case available:
        return std::to_string(s.available());
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& s, const op& o) {
    using namespace std::chrono_literals;
    switch (o.kind) {
      case acquire:
        co_await s.acquire();
        break;
      default:
        co_await coral::with_timeout(50us, s.acquire());
    }
    co_return "ok";
  }
};

inline void semaphore_model::invoke(const op& o, int id, bool cancelled,
                                    std::vector<step<semaphore_model>>& out) const {
  using k = semaphore_spec::kind;
  step<semaphore_model> s{*this, {}, {}};
  auto& m = s.next;
  switch (o.kind) {
    case k::acquire:
    case k::timed_acquire:
      if (cancelled)
        s.value = "aborted";
      else if (m.permits > 0)
        --m.permits, s.value = "ok";
      else
        m.waiters.push_back(id);
      break;
    case k::try_acquire:
      s.value = m.permits > 0 ? "true" : "false";
      if (m.permits > 0) --m.permits;
      break;
    case k::release:
      s.value = "ok";
      for (int n = 0; n < o.a; ++n) {  // to the first waiters, the rest to the count
        if (m.waiters.empty()) {
          ++m.permits;
        } else {
          s.woken.emplace_back(m.waiters.front(), "ok");
          m.waiters.pop_front();
        }
      }
      break;
    default:
      s.value = std::to_string(m.permits);
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
