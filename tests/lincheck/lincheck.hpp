#pragma once

// A linearizability checker for coral's shared objects, after Kotlin's Lincheck.
//
// A scenario is an initial part (one thread), a parallel part (2-3 threads of 2-4 operations each)
// and a final part (one thread), over one object. Each run of a scenario executes every part as
// coral tasks, one per thread, on a real executor, and records each operation's result (a value,
// an exception, "aborted"). When every thread of a part has finished or waits inside an operation
// and nothing moves any more, the part is torn down as Lincheck tears down blocking structures:
// the waiting tasks are cancelled, and an operation that then fails with operation_aborted is
// reported "suspended" (a cancelled wait did not happen).
//
// The outcome is checked against a plain sequential model of the object: some sequential
// execution of the same operations on the model must give every recorded result, and respect real
// time (an operation that began after another one returned comes after it; each operation records,
// when it begins, how many operations every thread had completed). Blocking operations follow
// Lincheck's rule for dual data structures: an operation that would wait registers as a waiter in
// the model, and a later operation completes it (a send hands its value to a waiting receive). A
// cancellation (job.cancel() of another thread's task, an operation of the scenario, or the
// teardown) takes effect at any moment after it was asked for, as job.cancel() promises: from then
// on the thread's waits fail with operation_aborted, the one in progress included. A timed
// operation (with_timeout) that timed out was a waiter that gave up at some moment, or did not
// begin at all (with_timeout does not start an operation whose deadline has passed). A model may
// also leave a waiter ready to end on its own at a later moment (ready_waiters(out), optional):
// the second step of an operation of two, such as latch's arrive_and_wait, whose wait begins after
// its count-down. The search is exhaustive, memoised on (model state, progress of each thread).
//
// An object is one small file (async_mutex.hpp in this folder is the shortest), included by
// test_lincheck.cpp and named in one test case there. The checker knows nothing else about it.
// The file defines a Spec:
//
//   struct my_spec {
//     static constexpr const char* name = "my_object";
//     using object = ...;                       // the real object, made fresh for every run
//     using model = ...;                        // its sequential model (below)
//     static int random_config(std::mt19937&);  // a variant of the object (capacity, count...)
//     static std::string describe_config(int);
//     static std::unique_ptr<object> make(int config);
//     static model make_model(int config);
//     static op random_op(std::mt19937&, int config, int& next_value);  // values sent: unique
//     static std::string describe(const op&);
//     // What happens in the call: all of an operation that does not wait (try_lock, close), and
//     // its result; nullopt for one that waits, which run() then awaits as a child of the
//     // thread's task. (A cancelled task starts no child: what must happen anyway belongs here.)
//     static std::optional<result> run_now(object&, const op&);
//     static coral::task<result> run(object&, const op&);
//   };
//
// and its model, a plain value type:
//
//   std::string key() const;  // equal for equal states (the search memoises on it)
//   // Begins `o` as operation `id`: each possible successor (more than one only where the object
//   // may choose, as a select between two ready branches does), with the result if it completed
//   // at once (nullopt: it waits, as waiter `id`), and the waiters it completed. An operation of
//   // a cancelled thread that would await fails with "aborted".
//   void invoke(const op& o, int id, bool cancelled, std::vector<step<model>>& out) const;
//   void cancel(int id);      // waiter `id` leaves (cancelled, timed out)
//   void ready_waiters(std::vector<std::pair<int, result>>& out) const;  // optional, see above
//   // Optional, for an operation of several steps: a cancellation (why: "aborted") or the timeout
//   // ("timeout") reaches waiter `id`. Each possible successor, with the operation's result if that
//   // ends it (nullopt: it goes on waiting, as a condition wait that must lock its mutex again, or
//   // one already handed what it waited for) and the waiters it completed (a waiting writer that
//   // leaves lets the readers behind it in). Without it, the waiter ends with `why`, and cancel().
//   void interrupt(int id, const result& why, std::vector<step<model>>& out) const;
//   // Optional: the steps the model takes of its own accord at any moment, such as the last step of
//   // an operation of several (a failed condition wait that holds its mutex again unlocks it); the
//   // operations each one ends are in its `woken`.
//   void moves(std::vector<step<model>>& out) const;
//
// A Spec may also keep state for each thread while a scenario is generated (so that a thread
// unlocks only what it locked, or reads only its own subscription): a type thread_context with
// members `int thread` and `bool alone` (the part has one thread: init, post), made once for each
// thread of the parallel part, the one-thread parts sharing thread 0's. random_op then takes it:
//   static op random_op(std::mt19937&, int config, int& next_value, thread_context&);
//   static void end_thread(thread_context&, std::vector<op>& ops);  // optional: last operations
// and, optional: static constexpr bool goes_on_after_teardown = true; (see part_run).
//
// Results are text, the same in run() and in the model: "ok", "true", a value, and for failures
// what failure_of() makes of the exception ("closed", "aborted", "timeout", "logic_error").

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <coral/coral.hpp>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace lincheck {

// An operation's result, as text: "ok", "true", a value, "closed", "aborted", "timeout", ...
using result = std::string;

// One operation of a scenario; kind, a and b mean what the object's Spec says. The checker's own
// operation: cancel(thread a), job.cancel() of that thread's task.
struct op {
  int kind = 0;
  int a = 0;
  int b = 0;
};
inline constexpr int cancel_kind = -1;

struct scenario {
  unsigned long seed = 0;
  int config = 0;  // the object's variant (a channel's flavour, a semaphore's count), the Spec's to read
  std::vector<std::vector<op>> parts[3];  // init (one thread), parallel, post (one thread)
};

// A model's step: the model after an operation began, and the operation's result if it completed at
// once (nullopt: it waits, as waiter `id`). Waiters that the step completed are in `woken`.
template <class Model>
struct step {
  Model next;
  std::optional<result> value;
  std::vector<std::pair<int, result>> woken;
};

// The result of an operation that failed with `e`, as the models write it.
inline result failure_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const coral::channel_closed&) {
    return "closed";
  } catch (const coral::timeout_error&) {
    return "timeout";
  } catch (const boost::system::system_error& s) {
    if (s.code() == boost::asio::error::operation_aborted) return "aborted";
    if (s.code() == coral::errc::channel_closed) return "closed";
    return "error " + s.code().message();
  } catch (const std::logic_error&) {
    return "logic_error";
  } catch (const std::exception& x) {
    return std::string("exception ") + x.what();
  }
}

// ---------------------------------------------------------------------------------------------
// What a run observed.

struct op_record {
  result value;
  std::vector<int> clock;  // operations each thread of the part had completed when this one began
  bool after_teardown = false;
};

struct part_record {
  std::vector<std::vector<op_record>> threads;  // the operations that ran, per thread
  bool torn_down = false;
  std::vector<int> teardown_clock;
  std::vector<int> torn_threads;  // cancelled by the teardown
};

struct outcome {
  part_record parts[3];
  std::string key() const {
    std::ostringstream s;
    for (const auto& p : parts) {
      for (const auto& t : p.threads) {
        for (const auto& o : t) {
          s << o.value << (o.after_teardown ? "!" : "") << '@';
          for (int c : o.clock) s << c << ',';
          s << ';';
        }
        s << '|';
      }
      if (p.torn_down) {
        s << "T";
        for (int c : p.teardown_clock) s << c << ',';
        for (int t : p.torn_threads) s << t << ' ';
      }
      s << '#';
    }
    return s.str();
  }
};

// ---------------------------------------------------------------------------------------------
// The search: is an outcome explained by the model?

template <class Spec>
class checker {
  using model = typename Spec::model;

 public:
  checker(const scenario& s, const outcome& o) : scenario_(s), outcome_(o) {}

  bool explained() {
    std::vector<model> states{Spec::make_model(scenario_.config)};
    for (int p = 0; p < 3 && !states.empty(); ++p) states = finals_of_part(p, states);
    return !states.empty();
  }

 private:
  struct state {
    model m;
    std::vector<int> next;        // the next operation of each thread
    std::vector<char> waiting;    // its last operation waits in the model
    std::vector<char> cancelled;  // cancellation has reached the thread
    std::vector<char> cancel_asked;
  };

  static int id_of(int thread, int index) { return thread * 64 + index; }

  std::vector<model> finals_of_part(int p, const std::vector<model>& starts) {
    part_ = &outcome_.parts[p];
    ops_ = &scenario_.parts[p];
    visited_.clear();
    finals_.clear();
    final_keys_.clear();
    const std::size_t threads = part_->threads.size();
    for (const auto& m : starts) {
      state s{m, std::vector<int>(threads, 0), std::vector<char>(threads, 0), std::vector<char>(threads, 0),
              std::vector<char>(threads, 0)};
      explore(std::move(s));
    }
    return std::move(finals_);
  }

  int completed(const state& s, std::size_t t) const { return s.next[t] - (s.waiting[t] ? 1 : 0); }
  bool clock_satisfied(const state& s, const std::vector<int>& clock) const {
    for (std::size_t t = 0; t < clock.size(); ++t)
      if (completed(s, t) < clock[t]) return false;
    return true;
  }
  const result& recorded(int id) const {
    return part_->threads[static_cast<std::size_t>(id / 64)][static_cast<std::size_t>(id % 64)].value;
  }

  std::string key_of(const state& s) const {
    std::string k = s.m.key();
    for (std::size_t t = 0; t < s.next.size(); ++t) {
      k += '/';
      k += std::to_string(s.next[t]);
      k += s.waiting[t] ? 'w' : '-';
      k += s.cancelled[t] ? 'c' : '-';
      k += s.cancel_asked[t] ? 'a' : '-';
    }
    return k;
  }

  // Applies the waiters a step completed; false if one of them was recorded otherwise.
  bool wake(state& s, const std::vector<std::pair<int, result>>& woken) const {
    for (const auto& [id, value] : woken) {
      const auto t = static_cast<std::size_t>(id / 64);
      if (!s.waiting[t] || s.next[t] - 1 != id % 64 || recorded(id) != value) return false;
      s.waiting[t] = 0;
    }
    return true;
  }

  // The waiting operation of thread t ends with `as` (cancelled, timed out, or ready to end) and
  // leaves the model: true if that is what was recorded.
  bool abandon(state& s, std::size_t t, const result& as) const {
    const int id = id_of(static_cast<int>(t), s.next[t] - 1);
    if (recorded(id) != as) return false;
    s.m.cancel(id);
    s.waiting[t] = 0;
    return true;
  }

  // A cancellation (`cancellation`) or the timeout reaches the waiting operation of thread t.
  void interrupt(const state& s, std::size_t t, const result& why, bool cancellation) {
    const int id = id_of(static_cast<int>(t), s.next[t] - 1);
    if constexpr (requires(std::vector<step<model>> & out) { s.m.interrupt(id, why, out); }) {
      std::vector<step<model>> steps;
      s.m.interrupt(id, why, steps);
      for (auto& st : steps) {
        state n{std::move(st.next), s.next, s.waiting, s.cancelled, s.cancel_asked};
        if (cancellation) n.cancelled[t] = 1;
        if (st.value) {
          if (*st.value != recorded(id)) continue;
          n.waiting[t] = 0;
        }
        if (wake(n, st.woken)) explore(std::move(n));
      }
    } else {
      state n = s;
      if (cancellation) n.cancelled[t] = 1;
      if (abandon(n, t, why)) explore(std::move(n));
    }
  }

  void explore(state s) {
    if (!visited_.insert(key_of(s)).second) return;
    const std::size_t threads = s.next.size();
    bool done = true;
    for (std::size_t t = 0; t < threads; ++t)
      if (s.waiting[t] || s.next[t] < static_cast<int>(part_->threads[t].size())) done = false;
    if (done) {
      if (final_keys_.insert(s.m.key()).second) finals_.push_back(s.m);
      return;
    }
    if constexpr (requires(std::vector<step<model>> & out) { s.m.moves(out); }) {
      std::vector<step<model>> steps;
      s.m.moves(steps);
      for (auto& st : steps) {
        state n{std::move(st.next), s.next, s.waiting, s.cancelled, s.cancel_asked};
        if (wake(n, st.woken)) explore(std::move(n));
      }
    }
    for (std::size_t t = 0; t < threads; ++t) {
      // A cancellation reaches thread t.
      const bool torn = std::count(part_->torn_threads.begin(), part_->torn_threads.end(), static_cast<int>(t)) &&
                        clock_satisfied(s, part_->teardown_clock);
      if (!s.cancelled[t] && (s.cancel_asked[t] || torn)) {
        if (s.waiting[t]) {
          interrupt(s, t, "aborted", true);
        } else {
          state n = s;
          n.cancelled[t] = 1;
          explore(std::move(n));
        }
      }
      if (s.waiting[t]) {
        // A timed wait of thread t gives up. (It may end "aborted" all the same, if a cancellation
        // comes before with_timeout returns, in a model that lets it.)
        if (const result& r = recorded(id_of(static_cast<int>(t), s.next[t] - 1)); r == "timeout" || r == "aborted")
          interrupt(s, t, "timeout", false);
        // A wait the model left ready to end ends.
        if constexpr (requires(std::vector<std::pair<int, result>> & out) { s.m.ready_waiters(out); }) {
          std::vector<std::pair<int, result>> ready;
          s.m.ready_waiters(ready);
          for (const auto& [id, value] : ready) {
            if (id / 64 != static_cast<int>(t)) continue;
            state r = s;
            if (abandon(r, t, value)) explore(std::move(r));
          }
        }
        continue;
      }
      // Thread t begins its next operation.
      if (s.next[t] >= static_cast<int>(part_->threads[t].size())) continue;
      const int index = s.next[t];
      const op& o = (*ops_)[t][static_cast<std::size_t>(index)];
      const op_record& r = part_->threads[t][static_cast<std::size_t>(index)];
      if (!clock_satisfied(s, r.clock)) continue;
      if (o.kind == cancel_kind) {
        state n = s;
        n.next[t]++;
        if (!n.cancelled[static_cast<std::size_t>(o.a)]) n.cancel_asked[static_cast<std::size_t>(o.a)] = 1;
        explore(std::move(n));
        continue;
      }
      if (r.value == "timeout") {  // timed out before it began (with_timeout may not start it)
        state n = s;
        n.next[t]++;
        explore(std::move(n));
      }
      std::vector<step<model>> steps;
      s.m.invoke(o, id_of(static_cast<int>(t), index), s.cancelled[t] != 0, steps);
      for (auto& st : steps) {
        if (st.value && *st.value != r.value) continue;
        state n{std::move(st.next), s.next, s.waiting, s.cancelled, s.cancel_asked};
        n.next[t]++;
        n.waiting[t] = st.value ? 0 : 1;
        if (!wake(n, st.woken)) continue;
        explore(std::move(n));
      }
    }
  }

  const scenario& scenario_;
  const outcome& outcome_;
  const part_record* part_ = nullptr;
  const std::vector<std::vector<op>>* ops_ = nullptr;
  std::unordered_set<std::string> visited_;
  std::vector<model> finals_;
  std::set<std::string> final_keys_;
};

// ---------------------------------------------------------------------------------------------
// Scenarios.

template <class Spec, bool>
struct thread_context_of {
  struct type {};
};
template <class Spec>
struct thread_context_of<Spec, true> {
  using type = typename Spec::thread_context;
};

template <class Spec>
scenario generate(unsigned long seed) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  scenario s;
  s.seed = seed;
  s.config = Spec::random_config(rng);
  int next_value = 1;
  constexpr bool has_context = requires {
    typename Spec::thread_context;
  };
  using context = typename thread_context_of<Spec, has_context>::type;
  std::vector<context> contexts(3);
  auto random_ops = [&](std::size_t count, int threads, int self) {
    context& c = contexts[static_cast<std::size_t>(self)];
    if constexpr (has_context) {
      c.thread = self;
      c.alone = threads == 1;
    }
    std::vector<op> ops;
    for (std::size_t i = 0; i < count; ++i) {
      if (threads > 1 && rng() % 8 == 0) {
        const int target = static_cast<int>((static_cast<unsigned>(self) + 1 + rng() % (threads - 1)) % threads);
        ops.push_back(op{cancel_kind, target, 0});
      } else if constexpr (has_context) {
        ops.push_back(Spec::random_op(rng, s.config, next_value, c));
      } else {
        ops.push_back(Spec::random_op(rng, s.config, next_value));
      }
    }
    if constexpr (requires { Spec::end_thread(c, ops); }) Spec::end_thread(c, ops);
    return ops;
  };
  s.parts[0].push_back(random_ops(rng() % 3, 1, 0));
  const int threads = 2 + static_cast<int>(rng() % 2);
  for (int t = 0; t < threads; ++t) s.parts[1].push_back(random_ops(2 + rng() % 3, threads, t));
  s.parts[2].push_back(random_ops(rng() % 3, 1, 0));
  return s;
}

template <class Spec>
std::string describe_op(const op& o) {
  if (o.kind == cancel_kind) return "cancel(thread " + std::to_string(o.a) + ")";
  return Spec::describe(o);
}

template <class Spec>
std::string describe(const scenario& s, const outcome* o) {
  std::ostringstream out;
  out << "  object: " << Spec::name << " " << Spec::describe_config(s.config) << "\n";
  static const char* const names[] = {"init", "parallel", "post"};
  for (int p = 0; p < 3; ++p) {
    for (std::size_t t = 0; t < s.parts[p].size(); ++t) {
      if (s.parts[p][t].empty()) continue;
      out << "  " << names[p];
      if (p == 1) out << " thread " << t;
      out << ":";
      for (std::size_t i = 0; i < s.parts[p][t].size(); ++i) {
        out << (i ? " | " : " ") << describe_op<Spec>(s.parts[p][t][i]);
        if (!o) continue;
        const auto& run = o->parts[p].threads[t];
        if (i >= run.size()) {
          out << " -> (not run)";
          continue;
        }
        const bool suspended = run[i].after_teardown && run[i].value == "aborted";
        out << " -> " << (suspended ? "suspended" : run[i].value);
        if (p == 1) {
          out << " [after";
          for (std::size_t k = 0; k < run[i].clock.size(); ++k)
            if (k != t) out << " " << run[i].clock[k] << " of thread " << k;
          out << "]";
        }
      }
      out << "\n";
    }
    if (o && o->parts[p].torn_down) {
      out << "  (" << names[p] << " torn down: cancelled threads";
      for (int t : o->parts[p].torn_threads) out << " " << t;
      out << ")\n";
    }
  }
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Running a scenario.

// Whether a thread that the teardown cancelled goes on with its operations (the waits fail at once,
// what does not wait runs), as a Spec asks for whose threads let go of what they hold at their end
// (a mutex that a torn-down thread took as it was cancelled, which another one must lock again).
template <class Spec>
constexpr bool goes_on_after_teardown = requires {
  requires Spec::goes_on_after_teardown;
};

template <class Spec>
class part_run {
 public:
  part_run(typename Spec::object& object, const std::vector<std::vector<op>>& ops, unsigned seed)
      : object_(object), ops_(ops), threads_(ops.size()), completed_(threads_), in_op_(threads_), finished_(threads_) {
    record_.threads.resize(threads_);
    std::mt19937 rng(seed);
    for (std::size_t t = 0; t < threads_; ++t) spin_seeds_.push_back(rng());
  }

  // Runs the part on the executors `place` gives, each thread's task on one of them.
  template <class Place>
  part_record run(Place& place) {
    for (std::size_t t = 0; t < threads_; ++t) jobs_.push_back(coral::spawn(place.get_executor(), thread_body(t)));
    go_.set();
    for (;;) {
      if (all_done()) break;
      if (all_finished_or_waiting() && nothing_moves(place)) {
        tear_down();
        break;
      }
      for (auto& j : jobs_)
        if (!j.done()) {
          j.wait_for(std::chrono::microseconds(200));
          break;
        }
    }
    for (auto& j : jobs_)
      if (!j.wait_for(std::chrono::seconds(30))) throw std::runtime_error("lincheck: a thread of the scenario hung");
    return std::move(record_);
  }

 private:
  coral::task<> thread_body(std::size_t t) {
    try {
      co_await go_.wait();
    } catch (...) {  // cancelled by another thread before it began: its operations fail
    }
    std::mt19937 rng(spin_seeds_[t]);
    for (const op& o : ops_[t]) {
      if (tearing_down_ && !goes_on_after_teardown<Spec>) break;
      // A little random work between operations, so that runs interleave differently.
      volatile unsigned work = 0;
      for (unsigned spin = rng() % 64 * (rng() % 4 == 0 ? 16 : 1); spin > 0; --spin) work = work + spin;
      op_record r;
      for (std::size_t k = 0; k < threads_; ++k) r.clock.push_back(completed_[k].load());
      in_op_[t] = true;
      ++progress_;
      if (o.kind == cancel_kind) {
        jobs_[static_cast<std::size_t>(o.a)].cancel();
        r.value = "ok";
      } else if (auto now = guarded_now(o)) {
        r.value = std::move(*now);
      } else {
        try {
          r.value = co_await guarded(o);
        } catch (...) {  // cancelled: the child that would have waited did not start
          r.value = failure_of(std::current_exception());
        }
      }
      r.after_teardown = tearing_down_;
      record_.threads[t].push_back(std::move(r));
      in_op_[t] = false;
      ++completed_[t];
      ++progress_;
    }
    finished_[t] = true;
    ++progress_;
  }

  // An operation that does not wait runs here, in the thread's task, cancelled or not.
  std::optional<result> guarded_now(const op& o) {
    try {
      return Spec::run_now(object_, o);
    } catch (...) {
      return failure_of(std::current_exception());
    }
  }
  coral::task<result> guarded(const op& o) {
    std::exception_ptr failure;
    try {
      co_return co_await Spec::run(object_, o);
    } catch (...) {
      failure = std::current_exception();
    }
    co_return failure_of(failure);
  }

  bool all_done() const {
    for (const auto& j : jobs_)
      if (!j.done()) return false;
    return true;
  }
  bool all_finished_or_waiting() const {
    for (std::size_t t = 0; t < threads_; ++t)
      if (!finished_[t] && !in_op_[t]) return false;
    return true;
  }
  // Whether the tasks stay where they are while work already queued on the executor runs.
  template <class Place>
  bool nothing_moves(Place& place) {
    const long before = progress_;
    for (int i = 0; i < 3; ++i) {
      std::this_thread::yield();
      boost::asio::post(place.get_executor(), boost::asio::use_future).wait();
    }
    return before == progress_ && all_finished_or_waiting();
  }
  void tear_down() {
    tearing_down_ = true;
    record_.torn_down = true;
    for (std::size_t k = 0; k < threads_; ++k) record_.teardown_clock.push_back(completed_[k].load());
    for (std::size_t t = 0; t < threads_; ++t) {
      if (finished_[t]) continue;
      record_.torn_threads.push_back(static_cast<int>(t));
      jobs_[t].cancel();
    }
  }

  typename Spec::object& object_;
  const std::vector<std::vector<op>>& ops_;
  std::size_t threads_;
  std::vector<std::atomic<int>> completed_;
  std::vector<std::atomic<bool>> in_op_, finished_;
  std::atomic<long> progress_{0};
  std::atomic<bool> tearing_down_{false};
  std::vector<unsigned> spin_seeds_;
  coral::event go_;
  std::vector<coral::job<void>> jobs_;
  part_record record_;
};

template <class Spec, class Place>
outcome run_once(const scenario& s, Place& place, unsigned seed) {
  auto object = Spec::make(s.config);
  outcome o;
  for (int p = 0; p < 3; ++p) {
    auto run = std::make_unique<part_run<Spec>>(*object, s.parts[p], seed + static_cast<unsigned>(p));
    try {
      o.parts[p] = run->run(place);
    } catch (const std::exception& e) {
      // (A task still runs: what it uses stays.)
      static_cast<void>(object.release());
      static_cast<void>(run.release());
      throw std::runtime_error(std::string(e.what()) + " (on " + Place::name + ")\n" + describe<Spec>(s, nullptr) +
                               "  replay: LINCHECK_SEED=" + std::to_string(s.seed) + "\n");
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// The driver.

struct options {
  long scenarios = 10;
  long runs = 10;  // per scenario and executor kind
  unsigned long first_seed = 1;
  bool stop_at_first_failure = true;
};

// LINCHECK_SCENARIOS, LINCHECK_RUNS: a longer run by hand; LINCHECK_SEED: that scenario only.
inline options options_from_environment(options o) {
  if (const char* v = std::getenv("LINCHECK_SCENARIOS")) o.scenarios = std::atol(v);
  if (const char* v = std::getenv("LINCHECK_RUNS")) o.runs = std::atol(v);
  if (const char* v = std::getenv("LINCHECK_SEED")) {
    o.first_seed = std::strtoul(v, nullptr, 10);
    o.scenarios = 1;
  }
  return o;
}

struct report {
  long scenarios = 0;
  long runs = 0;
  long distinct_outcomes = 0;
  std::vector<std::string> failures;
};

template <class Spec, class Place>
void check_on(const options& opt, report& rep) {
  Place place;
  for (long i = 0; i < opt.scenarios; ++i) {
    const scenario s = generate<Spec>(opt.first_seed + static_cast<unsigned long>(i));
    std::set<std::string> seen;
    for (long r = 0; r < opt.runs; ++r) {
      const outcome o = run_once<Spec>(s, place, static_cast<unsigned>(s.seed * 7919 + static_cast<unsigned long>(r)));
      ++rep.runs;
      if (!seen.insert(o.key()).second) continue;
      ++rep.distinct_outcomes;
      if (checker<Spec>(s, o).explained()) continue;
      std::ostringstream f;
      f << "lincheck: no sequential execution of " << Spec::name << " explains this outcome (on " << Place::name
        << ")\n"
        << describe<Spec>(s, &o) << "  replay: LINCHECK_SEED=" << s.seed << "\n";
      rep.failures.push_back(f.str());
      if (opt.stop_at_first_failure) return;
      break;
    }
    ++rep.scenarios;
  }
}

}  // namespace lincheck
