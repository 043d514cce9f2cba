#pragma once

// coral::shared_mutex in the std style: lock and lock_shared (also under with_timeout), try_lock,
// try_lock_shared, unlock, unlock_shared. Who holds the lock is not the model's business: neither
// unlock can tell who calls it. A waiting writer holds back every reader that comes after it; one
// that leaves (cancelled, timed out) lets them in.

#include <coral/shared_mutex.hpp>
#include <coral/with_timeout.hpp>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "lincheck.hpp"

namespace lincheck {

struct shared_mutex_model {
  bool writer = false;
  int readers = 0;
  std::deque<std::pair<int, bool>> waiters;  // (id, a writer)

  std::string key() const {
    std::string k = writer ? "W" : "-";
    k += std::to_string(readers);
    k += ':';
    for (const auto& [id, w] : waiters) {
      k += w ? 'w' : 'r';
      k += std::to_string(id);
      k += ',';
    }
    return k;
  }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<shared_mutex_model>>& out) const;

  // A waiting lock that leaves lets in the readers it held back.
  void interrupt(int id, const result& why, std::vector<step<shared_mutex_model>>& out) const {
    step<shared_mutex_model> s{*this, why, {}};
    std::erase_if(s.next.waiters, [id](const auto& w) { return w.first == id; });
    s.next.grant(s.woken);
    out.push_back(std::move(s));
  }

  // The waiters at the front that fit take the lock, first come, first served.
  void grant(std::vector<std::pair<int, result>>& woken) {
    while (!waiters.empty()) {
      const auto [id, is_writer] = waiters.front();
      if (writer || (is_writer && readers > 0)) return;
      if (is_writer)
        writer = true;
      else
        ++readers;
      woken.emplace_back(id, "ok");
      waiters.pop_front();
    }
  }
};

struct shared_mutex_spec {
  static constexpr const char* name = "shared_mutex";
  using object = coral::shared_mutex;
  using model = shared_mutex_model;
  enum kind {
    lock,
    timed_lock,
    try_lock,
    unlock,
    lock_shared,
    timed_lock_shared,
    try_lock_shared,
    unlock_shared,
    kinds
  };

  static int random_config(std::mt19937&) { return 0; }
  static std::string describe_config(int) { return ""; }
  static std::unique_ptr<object> make(int) { return std::make_unique<object>(); }
  static model make_model(int) { return {}; }

  static op random_op(std::mt19937& rng, int, int&) {
    static constexpr int weights[kinds] = {3, 1, 1, 3, 3, 1, 1, 3};
    int pick = static_cast<int>(rng() % 16);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    return op{k, 0, 0};
  }
  static std::string describe(const op& o) {
    static constexpr const char* names[] = {
        "lock()",        "with_timeout(lock())",        "try_lock()",        "unlock()",
        "lock_shared()", "with_timeout(lock_shared())", "try_lock_shared()", "unlock_shared()"};
    return names[o.kind];
  }

  static std::optional<result> run_now(object& m, const op& o) {
    switch (o.kind) {
      case try_lock:
        return m.try_lock() ? "true" : "false";
      case try_lock_shared:
        return m.try_lock_shared() ? "true" : "false";
      case unlock:
        m.unlock();
        return "ok";
      case unlock_shared:
        m.unlock_shared();
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
      case timed_lock:
        co_await coral::with_timeout(50us, m.lock());
        break;
      case lock_shared:
        co_await m.lock_shared();
        break;
      default:
        co_await coral::with_timeout(50us, m.lock_shared());
    }
    co_return "ok";
  }
};

inline void shared_mutex_model::invoke(const op& o, int id, bool cancelled,
                                       std::vector<step<shared_mutex_model>>& out) const {
  using k = shared_mutex_spec::kind;
  step<shared_mutex_model> s{*this, {}, {}};
  auto& m = s.next;
  const bool free = !m.writer && m.readers == 0;
  switch (o.kind) {
    case k::lock:
    case k::timed_lock:
    case k::lock_shared:
    case k::timed_lock_shared: {
      const bool is_writer = o.kind == k::lock || o.kind == k::timed_lock;
      if (cancelled) {
        s.value = "aborted";
      } else if (m.waiters.empty() && (is_writer ? free : !m.writer)) {
        s.value = "ok";
        if (is_writer)
          m.writer = true;
        else
          ++m.readers;
      } else {
        m.waiters.emplace_back(id, is_writer);
      }
      break;
    }
    case k::try_lock:
      s.value = m.waiters.empty() && free ? "true" : "false";
      if (*s.value == "true") m.writer = true;
      break;
    case k::try_lock_shared:
      s.value = m.waiters.empty() && !m.writer ? "true" : "false";
      if (*s.value == "true") ++m.readers;
      break;
    case k::unlock:
      if (!m.writer) {
        s.value = "logic_error";
      } else {
        s.value = "ok";
        m.writer = false;
        m.grant(s.woken);
      }
      break;
    default:
      if (m.readers == 0) {
        s.value = "logic_error";
      } else {
        s.value = "ok";
        --m.readers;
        m.grant(s.woken);
      }
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
