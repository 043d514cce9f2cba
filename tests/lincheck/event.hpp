#pragma once

// coral::event: set, reset, wait (also under with_timeout), is_set.

#include <coral/event.hpp>
#include <coral/with_timeout.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lincheck.hpp"

namespace lincheck {

struct event_model {
  bool set = false;
  std::vector<int> waiters;

  std::string key() const {
    std::string k = set ? "S" : "-";
    for (int w : waiters) k += std::to_string(w) + ",";
    return k;
  }
  void cancel(int id) { std::erase(waiters, id); }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<event_model>>& out) const;
};

struct event_spec {
  static constexpr const char* name = "event";
  using object = coral::event;
  using model = event_model;
  enum kind { set, reset, wait, timed_wait, is_set, kinds };

  static int random_config(std::mt19937&) { return 0; }
  static std::string describe_config(int) { return ""; }
  static std::unique_ptr<object> make(int) { return std::make_unique<object>(); }
  static model make_model(int) { return {}; }

  static op random_op(std::mt19937& rng, int, int&) {
    static constexpr int weights[kinds] = {2, 2, 3, 1, 1};
    int pick = static_cast<int>(rng() % 9);
    int k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    return op{k, 0, 0};
  }
  static std::string describe(const op& o) {
    static constexpr const char* names[] = {"set()", "reset()", "wait()", "with_timeout(wait())", "is_set()"};
    return names[o.kind];
  }

  static std::optional<result> run_now(object& e, const op& o) {
    switch (o.kind) {
      case set:
        e.set();
        return "ok";
      case reset:
        e.reset();
        return "ok";
      case is_set:
        return e.is_set() ? "true" : "false";
      default:
        return std::nullopt;
    }
  }
  static coral::task<result> run(object& e, const op& o) {
    using namespace std::chrono_literals;
    if (o.kind == timed_wait)
      co_await coral::with_timeout(50us, e.wait());
    else
      co_await e.wait();
    co_return "ok";
  }
};

inline void event_model::invoke(const op& o, int id, bool cancelled, std::vector<step<event_model>>& out) const {
  using k = event_spec::kind;
  step<event_model> s{*this, {}, {}};
  auto& m = s.next;
  switch (o.kind) {
    case k::set:
      m.set = true;
      for (int w : m.waiters) s.woken.emplace_back(w, "ok");
      m.waiters.clear();
      s.value = "ok";
      break;
    case k::reset:
      m.set = false;
      s.value = "ok";
      break;
    case k::is_set:
      s.value = m.set ? "true" : "false";
      break;
    default:
      if (cancelled)
        s.value = "aborted";
      else if (m.set)
        s.value = "ok";
      else
        m.waiters.push_back(id);
  }
  out.push_back(std::move(s));
}

}  // namespace lincheck
