#pragma once

// coral::watch<int> from 0 and a receiver for each thread, subscribed when the watch is made:
// send, close, the watch's get(); the thread's receiver's changed() (also under with_timeout),
// get(), has_changed(), and a fresh subscribe(). A changed() marks read the newest version when
// its task resumes, which may be newer than the one that woke it.

#include <array>
#include <coral/watch.hpp>
#include <coral/with_timeout.hpp>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lincheck.hpp"

namespace lincheck {

struct watch_and_receivers {
  coral::watch<int> w{0};
  std::array<coral::watch<int>::receiver, 3> r{w.subscribe(), w.subscribe(), w.subscribe()};
};

struct watch_model {
  int value = 0;
  int version = 0;
  bool closed = false;
  std::array<int, 3> seen{};                  // the version each receiver read
  std::vector<std::pair<int, int>> waiters;   // changed(): (id, receiver)
  std::vector<std::pair<int, int>> resuming;  // changed() that will succeed, once its task resumes

  std::string key() const {
    std::string k = std::to_string(value) + "v" + std::to_string(version) + (closed ? "C" : "-");
    for (int s : seen) k += std::to_string(s) + ",";
    k += "w";
    for (const auto& [id, r] : waiters) k += std::to_string(id) + ",";
    k += "r";
    for (const auto& [id, r] : resuming) k += std::to_string(id) + ",";
    return k;
  }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<watch_model>>& out) const;

  // A woken changed() cannot fail any more.
  void interrupt(int id, const result& why, std::vector<step<watch_model>>& out) const {
    for (std::size_t i = 0; i < waiters.size(); ++i) {
      if (waiters[i].first != id) continue;
      step<watch_model> s{*this, why, {}};
      s.next.waiters.erase(s.next.waiters.begin() + static_cast<std::ptrdiff_t>(i));
      out.push_back(std::move(s));
      return;
    }
    if (why == "aborted") out.push_back({*this, {}, {}});
  }
  // A changed() resumes: it marks the newest version read.
  void moves(std::vector<step<watch_model>>& out) const {
    for (std::size_t i = 0; i < resuming.size(); ++i) {
      step<watch_model> s{*this, {}, {{resuming[i].first, "ok"}}};
      s.next.seen[static_cast<std::size_t>(resuming[i].second)] = version;
      s.next.resuming.erase(s.next.resuming.begin() + static_cast<std::ptrdiff_t>(i));
      out.push_back(std::move(s));
    }
  }
};

struct watch_spec {
  static constexpr const char* name = "watch<int>";
  using object = watch_and_receivers;
  using model = watch_model;
  enum kind { send, close, watch_get, changed, timed_changed, get, has_changed, subscribe, kinds };

  struct thread_context {
    int thread = 0;
    bool alone = false;
  };

  static int random_config(std::mt19937&) { return 0; }
  static std::string describe_config(int) { return "(0)"; }
  static std::unique_ptr<object> make(int) { return std::make_unique<object>(); }
  static model make_model(int) { return {}; }

  // a: the value sent; b: the receiver (the thread's own; any of them in a part of one thread).
  static op random_op(std::mt19937& rng, int, int& next_value, thread_context& c) {
    static constexpr int weights[kinds] = {4, 1, 1, 4, 1, 2, 1, 1};
    int pick = static_cast<int>(rng() % 15);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    const int receiver = c.alone ? static_cast<int>(rng() % 3) : c.thread;
    return op{k, k == send ? next_value++ : 0, receiver};
  }
  static std::string describe(const op& o) {
    const std::string r = "r" + std::to_string(o.b);
    switch (o.kind) {
      case send:
        return "send(" + std::to_string(o.a) + ")";
      case close:
        return "close()";
      case watch_get:
        return "get()";
      case changed:
        return r + ".changed()";
      case timed_changed:
        return "with_timeout(" + r + ".changed())";
      case get:
        return r + ".get()";
      case has_changed:
        return r + ".has_changed()";
      default:
        return r + " = subscribe()";
    }
  }

  static std::optional<result> run_now(object& x, const op& o) {
    auto& r = x.r[static_cast<std::size_t>(o.b)];
    switch (o.kind) {
      case send:
        x.w.send(o.a);
        return "ok";
      case close:
        x.w.close();
        return "ok";
      case watch_get:
        return std::to_string(x.w.get());
      case get:
        return std::to_string(r.get());
      case has_changed:
        return r.has_changed() ? "true" : "false";
      case subscribe:
        r = x.w.subscribe();
        return "ok";
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& x, const op& o) {
    using namespace std::chrono_literals;
    auto& r = x.r[static_cast<std::size_t>(o.b)];
    if (o.kind == timed_changed)
      co_await coral::with_timeout(50us, r.changed());
    else
      co_await r.changed();
    co_return "ok";
  }
};

inline void watch_model::invoke(const op& o, int id, bool cancelled, std::vector<step<watch_model>>& out) const {
  using k = watch_spec::kind;
  step<watch_model> s{*this, {}, {}};
  auto& m = s.next;
  auto& seen = m.seen[static_cast<std::size_t>(o.b)];
  switch (o.kind) {
    case k::send:
      if (m.closed) {
        s.value = "closed";
        break;
      }
      m.value = o.a;
      ++m.version;
      m.resuming.insert(m.resuming.end(), m.waiters.begin(), m.waiters.end());
      m.waiters.clear();
      s.value = "ok";
      break;
    case k::close:
      if (!m.closed)
        for (const auto& w : m.waiters) s.woken.emplace_back(w.first, "closed");
      m.closed = true;
      m.waiters.clear();
      s.value = "ok";
      break;
    case k::watch_get:
      s.value = std::to_string(m.value);
      break;
    case k::changed:
    case k::timed_changed:
      if (cancelled)
        s.value = "aborted";
      else if (m.version != seen)
        m.resuming.emplace_back(id, o.b);
      else if (m.closed)
        s.value = "closed";
      else
        m.waiters.emplace_back(id, o.b);
      break;
    case k::get:
      seen = m.version;
      s.value = std::to_string(m.value);
      break;
    case k::has_changed:
      s.value = m.version != seen ? "true" : "false";
      break;
    default:
      seen = m.version;
      s.value = "ok";
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
