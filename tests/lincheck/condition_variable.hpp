#pragma once

// coral::condition_variable with its async_mutex, as a std::condition_variable is used: lock,
// unlock, wait(m) (also under with_timeout) while holding m, notify_one, notify_all. Each thread
// keeps its operations legal: it waits and unlocks only while it holds m, and locks only while it
// does not (an operation that a cancellation made illegal, as an unlock after a lock that was
// cancelled, is skipped); it unlocks m at its end. A wait returns holding m, also when it fails;
// the thread then unlocks m, as a lock guard going out of scope would.

#include <array>
#include <coral/async_mutex.hpp>
#include <coral/condition_variable.hpp>
#include <coral/with_timeout.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "lincheck.hpp"

namespace lincheck {

struct mutex_and_condition {
  coral::async_mutex m;
  coral::condition_variable cv;
  std::array<bool, 3> holds{};  // each thread's, by its number
};

struct condition_variable_model {
  // A task waiting for m: a lock(), or a wait(m) locking it again (`relock`) to end with `as`.
  struct mutex_waiter {
    int id = 0;
    int thread = 0;
    bool relock = false;
    result as;
  };
  struct condition_waiter {
    int id = 0;
    int thread = 0;
    bool timed = false;
  };
  int holder = -1;  // the thread that holds m
  std::deque<mutex_waiter> mutex_waiters;
  std::deque<condition_waiter> condition_waiters;
  // A failed wait, holding m again: it unlocks m, then its operation ends.
  std::optional<mutex_waiter> unlocking;

  std::string key() const {
    std::string k = std::to_string(holder) + "m";
    for (const auto& w : mutex_waiters) k += std::to_string(w.id) + (w.relock ? "r" + w.as : "") + ",";
    k += "c";
    for (const auto& w : condition_waiters) k += std::to_string(w.id) + (w.timed ? "t," : ",");
    if (unlocking) k += "u" + std::to_string(unlocking->id) + unlocking->as;
    return k;
  }

  void invoke(const op& o, int id, bool cancelled, std::vector<step<condition_variable_model>>& out) const;
  void interrupt(int id, const result& why, std::vector<step<condition_variable_model>>& out) const;
  void moves(std::vector<step<condition_variable_model>>& out) const {
    if (!unlocking) return;
    step<condition_variable_model> s{*this, {}, {{unlocking->id, unlocking->as}}};
    s.next.unlocking.reset();
    s.next.unlock(s.woken);
    out.push_back(std::move(s));
  }

  // m goes to the first waiting task, if any.
  void unlock(std::vector<std::pair<int, result>>& woken) {
    holder = -1;
    if (mutex_waiters.empty()) return;
    const mutex_waiter w = mutex_waiters.front();
    mutex_waiters.pop_front();
    take(w, woken);
  }
  void take(const mutex_waiter& w, std::vector<std::pair<int, result>>& woken) {
    holder = w.thread;
    if (w.relock && w.as != "ok")
      unlocking = w;
    else
      woken.emplace_back(w.id, "ok");
  }
  // A wait on the condition is over: it locks m again (a wait that cancellation does not reach).
  void relock(const condition_waiter& c, const result& as, std::vector<std::pair<int, result>>& woken) {
    const mutex_waiter w{c.id, c.thread, true, as};
    if (holder == -1)
      take(w, woken);
    else
      mutex_waiters.push_back(w);
  }
};

struct condition_variable_spec {
  static constexpr const char* name = "condition_variable with its async_mutex";
  using object = mutex_and_condition;
  using model = condition_variable_model;
  enum kind { lock, unlock, wait, timed_wait, notify_one, notify_all, kinds };

  struct thread_context {
    int thread = 0;
    bool alone = false;
    bool holds = false;
  };

  // (A thread that took m as the teardown cancelled it must unlock it: a wait locking m again is
  // not cancellable.)
  static constexpr bool goes_on_after_teardown = true;

  static int random_config(std::mt19937&) { return 0; }
  static std::string describe_config(int) { return ""; }
  static std::unique_ptr<object> make(int) { return std::make_unique<object>(); }
  static model make_model(int) { return {}; }

  // b: the thread.
  static op random_op(std::mt19937& rng, int, int&, thread_context& c) {
    int k = 0;
    const auto pick = rng() % 9;
    if (c.holds)
      k = pick < 3 ? unlock : pick < 6 ? wait : pick < 7 ? timed_wait : pick < 8 ? notify_one : notify_all;
    else
      k = pick < 5 ? lock : pick < 8 ? notify_one : notify_all;
    if (k == lock) c.holds = true;
    if (k == unlock) c.holds = false;
    return op{k, 0, c.thread};
  }
  static void end_thread(thread_context& c, std::vector<op>& ops) {
    if (c.holds) ops.push_back(op{unlock, 0, c.thread});
    c.holds = false;
  }
  static std::string describe(const op& o) {
    static constexpr const char* names[] = {"lock()",       "unlock()",    "wait(m)", "with_timeout(wait(m))",
                                            "notify_one()", "notify_all()"};
    return names[o.kind];
  }

  static std::optional<result> run_now(object& x, const op& o) {
    bool& holds = x.holds[static_cast<std::size_t>(o.b)];
    switch (o.kind) {
      case lock:
        return holds ? std::optional<result>("skipped") : std::nullopt;
      case unlock:
        if (!holds) return "skipped";
        x.m.unlock();
        holds = false;
        return "ok";
      case wait:
      case timed_wait:
        return holds ? std::nullopt : std::optional<result>("skipped");
      case notify_one:
        x.cv.notify_one();
        return "ok";
      default:
        x.cv.notify_all();
        return "ok";
    }
  }
  static coral::task<result> run(object& x, const op& o) {
    using namespace std::chrono_literals;
    bool& holds = x.holds[static_cast<std::size_t>(o.b)];
    if (o.kind == lock) {
      co_await x.m.lock();
      holds = true;
      co_return "ok";
    }
    std::exception_ptr failure;
    try {
      if (o.kind == wait)
        co_await x.cv.wait(x.m);
      else
        co_await coral::with_timeout(50us, x.cv.wait(x.m));
      co_return "ok";
    } catch (...) {
      failure = std::current_exception();
    }
    x.m.unlock();  // (the wait holds m again)
    holds = false;
    std::rethrow_exception(failure);
  }
};

inline void condition_variable_model::invoke(const op& o, int id, bool cancelled,
                                             std::vector<step<condition_variable_model>>& out) const {
  using k = condition_variable_spec::kind;
  step<condition_variable_model> s{*this, {}, {}};
  auto& m = s.next;
  const int thread = o.b;
  switch (o.kind) {
    case k::lock:
      if (m.holder == thread)
        s.value = "skipped";
      else if (cancelled)
        s.value = "aborted";
      else if (m.holder == -1)
        m.holder = thread, s.value = "ok";
      else
        m.mutex_waiters.push_back({id, thread, false, {}});
      break;
    case k::unlock:
      if (m.holder != thread) {
        s.value = "skipped";
      } else {
        s.value = "ok";
        m.unlock(s.woken);
      }
      break;
    case k::wait:
    case k::timed_wait:
      if (m.holder != thread) {
        s.value = "skipped";
        break;
      }
      if (cancelled) {  // before the wait began (it holds m still), or as it began (it unlocked m)
        out.push_back({*this, "aborted", {}});
        s.value = "aborted";
        m.unlock(s.woken);
      } else {  // queued on the condition, then m unlocked
        m.condition_waiters.push_back({id, thread, o.kind == k::timed_wait});
        m.unlock(s.woken);
      }
      if (o.kind == k::timed_wait) {  // its deadline passed before it began: m unlocked
        step<condition_variable_model> late{*this, "timeout", {}};
        late.next.unlock(late.woken);
        out.push_back(std::move(late));
      }
      break;
    case k::notify_one:
    case k::notify_all:
      s.value = "ok";
      while (!m.condition_waiters.empty()) {
        const condition_waiter w = m.condition_waiters.front();
        m.condition_waiters.pop_front();
        m.relock(w, "ok", s.woken);
        if (o.kind == k::notify_one) break;
      }
  }
  out.push_back(std::move(s));
}

inline void condition_variable_model::interrupt(int id, const result& why,
                                                std::vector<step<condition_variable_model>>& out) const {
  for (std::size_t i = 0; i < condition_waiters.size(); ++i) {
    if (condition_waiters[i].id != id) continue;
    if (why != "aborted" && !condition_waiters[i].timed) return;
    step<condition_variable_model> s{*this, {}, {}};  // it locks m again first
    s.next.condition_waiters.erase(s.next.condition_waiters.begin() + static_cast<std::ptrdiff_t>(i));
    s.next.relock(condition_waiters[i], why, s.woken);
    out.push_back(std::move(s));
    return;
  }
  for (std::size_t i = 0; i < mutex_waiters.size(); ++i) {
    if (mutex_waiters[i].id != id || mutex_waiters[i].relock) continue;
    if (why != "aborted") return;  // (a lock is not timed)
    step<condition_variable_model> s{*this, why, {}};
    s.next.mutex_waiters.erase(s.next.mutex_waiters.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(std::move(s));
    return;
  }
  // Locking m again, or unlocking it after: a cancellation changes nothing any more, but that a
  // wait that timed out may hear it instead, if it comes before with_timeout returns.
  if (why != "aborted") return;
  out.push_back({*this, {}, {}});
  step<condition_variable_model> s{*this, {}, {}};
  for (auto& w : s.next.mutex_waiters) {
    if (w.id == id && w.as == "timeout") {
      w.as = why;
      out.push_back(std::move(s));
      return;
    }
  }
  if (auto& u = s.next.unlocking; u && u->id == id && u->as == "timeout") {
    u->as = why;
    out.push_back(std::move(s));
  }
}

}  // namespace lincheck
