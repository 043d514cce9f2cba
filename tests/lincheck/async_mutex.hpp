#pragma once

// coral::async_mutex in the std style: lock (also under with_timeout), try_lock, unlock. Who holds
// the lock is not the model's business: unlock() cannot tell who calls it either.

#include <coral/async_mutex.hpp>
#include <coral/with_timeout.hpp>
#include <deque>
#include <memory>
#include <random>
#include <string>

#include "lincheck.hpp"

namespace lincheck {

struct async_mutex_model {
  bool locked = false;
  std::deque<int> waiters;

  std::string key() const {
    std::string k = locked ? "L" : "-";
    for (int w : waiters) k += std::to_string(w) + ",";
    return k;
  }
  void cancel(int id) { std::erase(waiters, id); }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<async_mutex_model>>& out) const;
};

struct async_mutex_spec {
  static constexpr const char* name = "async_mutex";
  using object = coral::async_mutex;
  using model = async_mutex_model;
  enum kind { lock, timed_lock, try_lock, unlock, kinds };

  static int random_config(std::mt19937&) { return 0; }
  static std::string describe_config(int) { return ""; }
  static std::unique_ptr<object> make(int) { return std::make_unique<object>(); }
  static model make_model(int) { return {}; }

  static op random_op(std::mt19937& rng, int, int&) {
    static constexpr int weights[kinds] = {3, 1, 1, 3};
    int pick = static_cast<int>(rng() % 8);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    return op{k, 0, 0};
  }
  static std::string describe(const op& o) {
    static constexpr const char* names[] = {"lock()", "with_timeout(lock())", "try_lock()", "unlock()"};
    return names[o.kind];
  }

  static std::optional<result> run_now(object& m, const op& o) {
    switch (o.kind) {
      case try_lock:
        return m.try_lock() ? "true" : "false";
      case unlock:
        m.unlock();
        return "ok";
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& m, const op& o) {
    using namespace std::chrono_literals;
    switch (o.kind) {
      case lock:
        co_await m.lock();
        break;
      default:
        co_await coral::with_timeout(50us, m.lock());
    }
    co_return "ok";
  }
};

inline void async_mutex_model::invoke(const op& o, int id, bool cancelled,
                                      std::vector<step<async_mutex_model>>& out) const {
  using k = async_mutex_spec::kind;
  step<async_mutex_model> s{*this, {}, {}};
  auto& m = s.next;
  switch (o.kind) {
    case k::lock:
    case k::timed_lock:
      if (cancelled)
        s.value = "aborted";
      else if (!m.locked)
        m.locked = true, s.value = "ok";
      else
        m.waiters.push_back(id);
      break;
    case k::try_lock:
      s.value = m.locked ? "false" : "true";
      m.locked = true;
      break;
    default:
      if (!m.locked) {
        s.value = "logic_error";
      } else {
        s.value = "ok";
        if (m.waiters.empty()) {
          m.locked = false;
        } else {  // handed straight to the first waiter
          s.woken.emplace_back(m.waiters.front(), "ok");
          m.waiters.pop_front();
        }
      }
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
