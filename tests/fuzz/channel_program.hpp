#pragma once

// A program of channel and select operations, decoded from bytes, run by a few tasks on one
// executor kind, then checked against the channel contract. The same interpreter serves the
// libFuzzer target (the fuzzer's bytes are the program, run on an io_context stepped by the
// fuzzing thread, so that a finding reproduces) and the randomized stress test (bytes from a
// seeded PRNG, run on every executor kind, with cancellations and closes from another thread).
//
// What a run checks, by counting each value (a unique id carried by a counting payload):
// - every value sent is received at most once, and on the channel it was sent to;
// - a send that succeeded delivered its value: it is received, still buffered (drained at the
//   end), or, on a channel that drops (drop_oldest, drop_latest, conflated), dropped;
// - a send that failed (closed, cancelled, timed out, a select branch that lost, a try_send
//   that returned false) delivered nothing;
// - every value is destroyed exactly once, and every payload object constructed is destroyed
//   (no leak); no payload is default-constructed (a value the program never sent);
// - every task ends once its channels are closed, or it is cancelled, or its context destroyed,
//   and its frame is freed;
// - failures are the documented ones: channel_closed only after a close, a close's cause only
//   on a receive from the channel closed with it, operation_aborted only after job.cancel(),
//   timeout_error only from with_timeout; once a task has seen operation_aborted every later
//   wait of it fails the same way (cancellation is level-triggered).

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "../running_io_context.hpp"

namespace coral_fuzz {

namespace asio = boost::asio;

// The rules each check pins, as constants so that one can be switched off to count how often it
// is broken while investigating:
// - no payload is default-constructed by coral (a losing receive makes no value);
inline constexpr bool check_no_default_constructed_values = true;
// - a join is over when its children are: when a select returns (or throws), the values of its
//   losing sends have been destroyed;
inline constexpr bool check_losing_values_destroyed_when_select_returns = true;
// - a job reports done only when nothing of its task is left: no payload outlives every job's end.
inline constexpr bool check_payloads_destroyed_when_jobs_done = true;

// ---------------------------------------------------------------------------------------------
// The program.

enum class flavour { rendezvous, bounded, drop_oldest, drop_latest, unlimited, conflated, count };

struct channel_spec {
  flavour kind = flavour::rendezvous;
  std::size_t capacity = 0;  // for bounded, drop_oldest, drop_latest
  bool drops() const noexcept {
    return kind == flavour::drop_oldest || kind == flavour::drop_latest || kind == flavour::conflated;
  }
  bool bounded_size() const noexcept { return kind != flavour::unlimited; }
  std::size_t max_size() const noexcept {
    return kind == flavour::rendezvous ? 0 : kind == flavour::conflated ? 1 : capacity;
  }
};

enum class op_kind {
  send,
  send_operator,  // co_await (ch << v)
  receive,
  receive_operator,  // co_await (ch >> v)
  next,
  try_send,
  try_receive,
  close,
  close_with_cause,
  select,
  timed_receive,  // with_timeout(d, ch.receive())
  timed_send,     // with_timeout(d, ch.send(v))
  yield,
  count
};

// A select's arguments, in this order: `sends` channel sends, `receives` receives, `nexts` next()
// calls, then a duration if `sleep`. Only these shapes are compiled (each is a template
// instantiation); the order of the arguments does not matter to a select, which tries its
// channel operations from a random start.
struct select_shape {
  int sends, receives, nexts;
  bool sleep;
  int operations() const noexcept { return sends + receives + nexts; }
};
inline constexpr select_shape select_shapes[] = {
    {1, 0, 0, true},  {0, 1, 0, true},  {0, 0, 1, true},                                       // one operation
    {2, 0, 0, false}, {1, 1, 0, false}, {0, 2, 0, false},                                      // two
    {2, 0, 0, true},  {1, 1, 0, true},  {0, 2, 0, true},                                       //
    {1, 0, 1, false}, {0, 1, 1, false}, {0, 0, 2, false},                                      //
    {1, 0, 1, true},  {0, 1, 1, true},  {0, 0, 2, true},                                       //
    {3, 0, 0, false}, {2, 1, 0, false}, {1, 2, 0, false}, {0, 3, 0, false},                    // three
    {3, 0, 0, true},  {2, 1, 0, true},  {1, 2, 0, true},  {0, 3, 0, true},                     //
    {4, 0, 0, false}, {3, 1, 0, false}, {2, 2, 0, false}, {1, 3, 0, false}, {0, 4, 0, false},  // four
    {4, 0, 0, true},  {3, 1, 0, true},  {2, 2, 0, true},  {1, 3, 0, true},  {0, 4, 0, true},
};
inline constexpr std::size_t select_shape_count = std::size(select_shapes);

struct op {
  op_kind kind = op_kind::yield;
  int channel = 0;
  int shape = 0;                          // select: index into select_shapes
  std::array<int, 4> branches{};          // select: the channel of each operation, in argument order
  std::chrono::microseconds duration{0};  // select with a sleep, timed_*
};

struct task_spec {
  std::vector<op> ops;
};

// What the driving thread does while the tasks run.
enum class step_kind { run, cancel, close, close_with_cause, try_send, try_receive, count };
struct step {
  step_kind kind = step_kind::run;
  int target = 0;  // run: how many handlers (stepped) or yields; cancel: the task; else the channel
};

// How a program ends: every channel closed (each task must then run to its end), every task
// cancelled (each must end), or the execution context destroyed while tasks wait.
enum class ending { close_all, cancel_all, destroy_context, count };

struct program {
  std::vector<channel_spec> channels;
  std::vector<task_spec> tasks;
  std::vector<step> steps;
  ending end = ending::close_all;
  // Stepped: the odd tasks run on a second io_context, which outlives the first when the ending
  // destroys a context (a later close() or cancel() must not touch the dead one).
  bool two_contexts = false;
  // Stepped: before the ending, the tasks run until none can go on (they all wait or are done),
  // so that the ending meets them waiting rather than not yet started.
  bool settle_first = true;
};

// Durations a program may use. A long one is never meant to expire: each wait on it also waits
// on a channel, and the ending closes or cancels it.
inline constexpr std::chrono::microseconds long_duration = std::chrono::seconds(10);
// For the fuzzer: an expired deadline or one that never expires, so that a run does not depend
// on how long its steps took.
inline const std::vector<std::chrono::microseconds> reproducible_durations{std::chrono::microseconds(0), long_duration};
inline const std::vector<std::chrono::microseconds> racing_durations{
    std::chrono::microseconds(0), std::chrono::microseconds(50), std::chrono::microseconds(500), long_duration};

// Reads choices from bytes; once they run out every choice is 0, so any input is a program.
class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}
  int pick(int n) noexcept { return pos_ < size_ ? data_[pos_++] % n : 0; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// How often each operation is chosen: closes and cancels are rare enough that most values are
// exchanged before everything fails with channel_closed or operation_aborted.
inline constexpr std::array op_weights = {
    op_kind::send,          op_kind::send,
    op_kind::send,          op_kind::send,
    op_kind::send_operator, op_kind::receive,
    op_kind::receive,       op_kind::receive,
    op_kind::receive,       op_kind::receive_operator,
    op_kind::next,          op_kind::next,
    op_kind::try_send,      op_kind::try_send,
    op_kind::try_receive,   op_kind::try_receive,
    op_kind::close,         op_kind::close_with_cause,
    op_kind::select,        op_kind::select,
    op_kind::select,        op_kind::select,
    op_kind::select,        op_kind::select,
    op_kind::select,        op_kind::timed_receive,
    op_kind::timed_receive, op_kind::timed_receive,
    op_kind::timed_send,    op_kind::timed_send,
    op_kind::yield,         op_kind::yield,
};
inline constexpr std::array step_weights = {
    step_kind::run,      step_kind::run,      step_kind::run,         step_kind::run,
    step_kind::run,      step_kind::cancel,   step_kind::close,       step_kind::close_with_cause,
    step_kind::try_send, step_kind::try_send, step_kind::try_receive, step_kind::try_receive,
};

inline program decode(const std::uint8_t* data, std::size_t size,
                      const std::vector<std::chrono::microseconds>& durations) {
  byte_reader in(data, size);
  program p;
  const int channels = 1 + in.pick(4);
  for (int c = 0; c < channels; ++c) {
    channel_spec spec;
    spec.kind = static_cast<flavour>(in.pick(static_cast<int>(flavour::count)));
    spec.capacity = spec.kind == flavour::rendezvous  ? 0
                    : spec.kind == flavour::unlimited ? coral::unlimited
                    : spec.kind == flavour::conflated ? 1
                                                      : static_cast<std::size_t>(1 + in.pick(3));
    p.channels.push_back(spec);
  }
  const auto duration = [&] {
    return durations[static_cast<std::size_t>(in.pick(static_cast<int>(durations.size())))];
  };
  const int tasks = 1 + in.pick(5);
  for (int t = 0; t < tasks; ++t) {
    task_spec spec;
    const int ops = 1 + in.pick(10);
    for (int i = 0; i < ops; ++i) {
      op o;
      o.kind = op_weights[static_cast<std::size_t>(in.pick(static_cast<int>(op_weights.size())))];
      o.channel = in.pick(channels);
      if (o.kind == op_kind::select) {
        o.shape = in.pick(static_cast<int>(select_shape_count));
        for (int b = 0; b < select_shapes[o.shape].operations(); ++b) o.branches[b] = in.pick(channels);
        if (select_shapes[o.shape].sleep) o.duration = duration();
      }
      if (o.kind == op_kind::timed_receive || o.kind == op_kind::timed_send) o.duration = duration();
      spec.ops.push_back(o);
    }
    p.tasks.push_back(std::move(spec));
  }
  const int steps = in.pick(12);
  for (int s = 0; s < steps; ++s) {
    step st;
    st.kind = step_weights[static_cast<std::size_t>(in.pick(static_cast<int>(step_weights.size())))];
    st.target = st.kind == step_kind::run      ? 1 + in.pick(8)
                : st.kind == step_kind::cancel ? in.pick(tasks)
                                               : in.pick(channels);
    p.steps.push_back(st);
  }
  p.end = static_cast<ending>(in.pick(static_cast<int>(ending::count)));
  p.two_contexts = in.pick(2) == 1;
  p.settle_first = in.pick(2) == 0;
  return p;
}

inline std::string describe(const program& p) {
  static const char* const flavours[] = {"rendezvous",  "bounded",   "drop_oldest",
                                         "drop_latest", "unlimited", "conflated"};
  static const char* const ops[] = {"send",          "send<<",      "receive", "receive>>",    "next",
                                    "try_send",      "try_receive", "close",   "close(cause)", "select",
                                    "timed_receive", "timed_send",  "yield"};
  static const char* const steps[] = {"run", "cancel task", "close", "close(cause)", "try_send", "try_receive"};
  static const char* const endings[] = {"close all", "cancel all", "destroy context"};
  std::ostringstream s;
  for (std::size_t c = 0; c < p.channels.size(); ++c) {
    s << "channel " << c << ": " << flavours[static_cast<int>(p.channels[c].kind)];
    if (p.channels[c].kind == flavour::bounded || p.channels[c].kind == flavour::drop_oldest ||
        p.channels[c].kind == flavour::drop_latest) {
      s << "(" << p.channels[c].capacity << ")";
    }
    s << "\n";
  }
  for (std::size_t t = 0; t < p.tasks.size(); ++t) {
    s << "task " << t << ":";
    for (const op& o : p.tasks[t].ops) {
      s << " " << ops[static_cast<int>(o.kind)];
      if (o.kind == op_kind::select) {
        const select_shape& shape = select_shapes[o.shape];
        s << "(";
        for (int b = 0; b < shape.operations(); ++b) {
          s << (b ? " " : "")
            << (b < shape.sends                    ? "send "
                : b < shape.sends + shape.receives ? "receive "
                                                   : "next ")
            << o.branches[b];
        }
        if (shape.sleep) s << " " << o.duration.count() << "us";
        s << ")";
      } else if (o.kind != op_kind::yield) {
        s << " " << o.channel;
        if (o.kind == op_kind::timed_receive || o.kind == op_kind::timed_send) s << " " << o.duration.count() << "us";
      }
      s << ";";
    }
    s << "\n";
  }
  s << "driver:";
  for (const step& st : p.steps) s << " " << steps[static_cast<int>(st.kind)] << " " << st.target << ";";
  s << "\nending: " << endings[static_cast<int>(p.end)] << (p.two_contexts ? " (odd tasks on a second context)" : "")
    << (p.settle_first ? ", once every task waits or is done" : "") << "\n";
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// The payload and the ledger of values.

inline constexpr long max_values = 2048;  // more than a program can create (tasks * ops * 4 + steps)

struct value_record {
  std::atomic<int> channel{-1};
  std::atomic<int> send{0};  // send_state
  std::atomic<int> received{0};
  std::atomic<int> received_on{-1};
  std::atomic<int> drained{0};
  std::atomic<int> destroyed{0};
};
enum send_state : int { not_resolved = 0, delivered = 1, not_delivered = 2 };

struct payload_counts {
  std::atomic<long> constructed{0};
  std::atomic<long> destroyed{0};
  std::atomic<long> default_constructed{0};
  std::atomic<long> default_alive{0};  // objects holding a default-constructed payload
};

// One program runs at a time: the ledger is process-wide so that the payload needs no pointer.
inline std::array<value_record, max_values> ledger;
inline std::atomic<long> next_value{0};
inline payload_counts counts;

inline void reset_ledger() noexcept {
  for (long i = 0; i < next_value.load(); ++i) {
    value_record& r = ledger[static_cast<std::size_t>(i)];
    r.channel = -1;
    r.send = not_resolved;
    r.received = 0;
    r.received_on = -1;
    r.drained = 0;
    r.destroyed = 0;
  }
  next_value = 0;
  counts.constructed = 0;
  counts.destroyed = 0;
  counts.default_constructed = 0;
  counts.default_alive = 0;
}

// A move-only value with a unique id. A moved-from item holds no value; destroying an item that
// holds one ends that value (counted per id).
struct item {
  static constexpr long empty = -1;
  static constexpr long made_by_default = -2;
  static constexpr long placeholder = -3;  // the target of a (ch >> v)

  long id;

  explicit item(long i) noexcept : id(i) { ++counts.constructed; }
  item() noexcept : id(made_by_default) {
    ++counts.constructed;
    ++counts.default_constructed;
    ++counts.default_alive;
  }
  item(item&& other) noexcept : id(std::exchange(other.id, empty)) { ++counts.constructed; }
  item& operator=(item&& other) noexcept {
    if (this != &other) {
      end_value();
      id = std::exchange(other.id, empty);
    }
    return *this;
  }
  item(const item&) = delete;
  item& operator=(const item&) = delete;
  ~item() {
    end_value();
    ++counts.destroyed;
  }

 private:
  void end_value() noexcept {
    if (id >= 0) ++ledger[static_cast<std::size_t>(id)].destroyed;
    if (id == made_by_default) --counts.default_alive;
    id = empty;
  }
};

// What the cause of a close(cause) is: receivers of that channel get it once it is drained.
struct closed_with_cause : std::runtime_error {
  explicit closed_with_cause(int c) : std::runtime_error("closed with a cause"), channel(c) {}
  int channel;
};

// ---------------------------------------------------------------------------------------------
// A run.

enum class executor_kind { stepped, io_context_1_thread, io_context_2_threads, pool_strands, inline_exec, pool_exec };
inline const char* name_of(executor_kind k) {
  static const char* const names[] = {
      "io_context stepped by the caller", "io_context on 1 thread", "io_context on 2 threads",
      "thread_pool, a strand per task",   "inline_executor",        "pool_executor"};
  return names[static_cast<int>(k)];
}

enum class stat {
  programs,
  values,
  received,
  drained,
  dropped,
  in_flight,
  failed_sends,
  selects,
  sleeps_won,
  aborted,
  timeouts,
  closed,
  made_by_default,
  late_loser_values,
  late_payloads,
  late_values,
  late_defaults,
  count
};
inline constexpr std::size_t stat_count = static_cast<std::size_t>(stat::count);
inline const char* const stat_names[] = {"programs",
                                         "values",
                                         "received",
                                         "drained",
                                         "dropped",
                                         "lost with a destroyed context",
                                         "failed sends",
                                         "selects",
                                         "sleeps won",
                                         "aborted",
                                         "timeouts",
                                         "closed",
                                         "payloads default-constructed by coral",
                                         "losing send values still alive after their select",
                                         "payloads destroyed after every job was done",
                                         "of which holding a value",
                                         "of which default-constructed"};
static_assert(std::size(stat_names) == stat_count);

struct statistics {
  std::array<long, stat_count> n{};
  statistics& operator+=(const statistics& o) {
    for (std::size_t i = 0; i < n.size(); ++i) n[i] += o.n[i];
    return *this;
  }
  std::string text() const {
    std::string s;
    for (std::size_t i = 0; i < n.size(); ++i)
      s += std::string(i ? ", " : "") + stat_names[i] + " " + std::to_string(n[i]);
    return s;
  }
};

struct report {
  std::vector<std::string> failures;
  statistics stats;
};

enum class outcome { ok, closed, cause, aborted, timeout, other };

class world {
 public:
  explicit world(const program& p)
      : prog(p),
        plain_closes(p.channels.size()),
        cause_closes(p.channels.size()),
        cancels(p.tasks.size()),
        finished(p.tasks.size()) {
    for (const channel_spec& spec : p.channels) {
      switch (spec.kind) {
        case flavour::drop_oldest:
          channels.push_back(std::make_unique<coral::channel<item>>(spec.capacity, coral::overflow::drop_oldest));
          break;
        case flavour::drop_latest:
          channels.push_back(std::make_unique<coral::channel<item>>(spec.capacity, coral::overflow::drop_latest));
          break;
        case flavour::conflated:
          channels.push_back(std::make_unique<coral::channel<item>>(coral::conflated));
          break;
        default:
          channels.push_back(std::make_unique<coral::channel<item>>(spec.capacity));
      }
    }
  }

  const program& prog;
  std::vector<std::unique_ptr<coral::channel<item>>> channels;
  // Set before the operation they announce, so whoever sees its effect sees the flag.
  std::vector<std::atomic<bool>> plain_closes, cause_closes, cancels;
  std::vector<std::atomic<bool>> finished;
  std::atomic<long> frames{0};

  coral::channel<item>& ch(int c) { return *channels[static_cast<std::size_t>(c)]; }

  void fail(std::string what) {
    std::lock_guard lock(mutex_);
    if (failures_.size() < 20) failures_.push_back(std::move(what));
  }
  std::vector<std::string> take_failures() {
    std::lock_guard lock(mutex_);
    return std::move(failures_);
  }

  // A new value, to be sent on channel c; its id is stored in `id`.
  item make(long& id, int c) {
    id = next_value.fetch_add(1);
    if (id >= max_values) throw std::logic_error("coral_fuzz: a program made more values than the ledger holds");
    ledger[static_cast<std::size_t>(id)].channel = c;
    return item(id);
  }
  void resolve(long id, bool was_delivered) {
    if (id < 0) return;
    ledger[static_cast<std::size_t>(id)].send = was_delivered ? delivered : not_delivered;
  }
  void received(const item& v, int c, const char* how) {
    if (v.id < 0) {
      fail(std::string(how) + " on channel " + std::to_string(c) + " gave a payload that was never sent (id " +
           std::to_string(v.id) + ")");
      return;
    }
    value_record& r = ledger[static_cast<std::size_t>(v.id)];
    ++r.received;
    r.received_on = c;
    count(stat::received);
  }

  // Judges how an operation ended. `sending`/`receiving`: bit masks of the channels it sent to or
  // received from; `suspends`: it is a suspension point (level-triggered cancellation applies).
  outcome judge(int task, bool& aborted_seen, std::exception_ptr e, unsigned sending, unsigned receiving, bool timed,
                bool suspends, const char* what) {
    outcome o = outcome::ok;
    std::string detail;
    int cause_channel = -1;
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const coral::channel_closed&) {
        o = outcome::closed;
      } catch (const coral::timeout_error&) {
        o = outcome::timeout;
      } catch (const boost::system::system_error& x) {
        if (x.code() == asio::error::operation_aborted) {
          o = outcome::aborted;
        } else {
          o = outcome::other;
          detail = x.what();
        }
      } catch (const closed_with_cause& x) {
        o = outcome::cause;
        cause_channel = x.channel;
      } catch (const std::exception& x) {
        o = outcome::other;
        detail = x.what();
      } catch (...) {
        o = outcome::other;
        detail = "an exception of unknown type";
      }
    }
    const std::string where = std::string(what) + " in task " + std::to_string(task);
    switch (o) {
      case outcome::ok:
        break;
      case outcome::closed: {
        count(stat::closed);
        bool explained = false;
        for (std::size_t c = 0; c < channels.size(); ++c) {
          const unsigned bit = 1u << c;
          if ((sending & bit) && (plain_closes[c] || cause_closes[c])) explained = true;
          if ((receiving & bit) && plain_closes[c]) explained = true;
        }
        if (!explained) fail(where + " failed with channel_closed, but no close() could cause it");
        break;
      }
      case outcome::cause:
        if (cause_channel < 0 || !(receiving & (1u << cause_channel)) || !cause_closes[cause_channel]) {
          fail(where + " failed with the cause of a close of channel " + std::to_string(cause_channel) +
               ", which it does not receive from or which was not closed with a cause");
        }
        break;
      case outcome::aborted:
        count(stat::aborted);
        if (!cancels[static_cast<std::size_t>(task)])
          fail(where + " failed with operation_aborted, but no one cancelled the task");
        break;
      case outcome::timeout:
        count(stat::timeouts);
        if (!timed) fail(where + " failed with timeout_error, but it has no deadline");
        break;
      case outcome::other:
        fail(where + " failed with an unexpected exception: " + detail);
        break;
    }
    if (suspends && aborted_seen && o != outcome::aborted) {
      fail(where + " did not fail with operation_aborted after the task had seen its cancellation (level-triggered)");
    }
    if (o == outcome::aborted) aborted_seen = true;
    return o;
  }

  void count(stat s) noexcept { stats_[static_cast<std::size_t>(s)].fetch_add(1, std::memory_order_relaxed); }
  void set(stat s, long v) noexcept { stats_[static_cast<std::size_t>(s)] = v; }
  statistics snapshot() const {
    statistics r;
    for (std::size_t i = 0; i < r.n.size(); ++i) r.n[i] = stats_[i].load();
    return r;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> failures_;
  std::array<std::atomic<long>, stat_count> stats_{};
};

// Counts a task's frame, so that a destroyed context is seen to have freed it.
struct frame_count {
  explicit frame_count(world& w) noexcept : w_(w) { ++w_.frames; }
  ~frame_count() { --w_.frames; }
  frame_count(const frame_count&) = delete;
  frame_count& operator=(const frame_count&) = delete;

 private:
  world& w_;
};

// ---------------------------------------------------------------------------------------------
// Selects.

template <select_shape Shape>
coral::task<outcome> run_select(world& w, int task, bool& aborted_seen, const op& o) {
  constexpr int S = Shape.sends, R = Shape.receives, N = Shape.nexts;
  std::array<long, 4> ids{-1, -1, -1, -1};
  unsigned sending = 0, receiving = 0;
  for (int b = 0; b < S; ++b) sending |= 1u << o.branches[b];
  for (int b = S; b < S + R + N; ++b) receiving |= 1u << o.branches[b];
  std::exception_ptr error;
  std::size_t winner = std::variant_npos;
  try {
    auto sends = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(w.ch(o.branches[I]).send(w.make(ids[I], o.branches[I]))...);
    }
    (std::make_index_sequence<S>{});
    auto receives = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(w.ch(o.branches[S + I]).receive()...);
    }
    (std::make_index_sequence<R>{});
    auto nexts = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(w.ch(o.branches[S + R + I]).next()...);
    }
    (std::make_index_sequence<N>{});
    auto sleep = [&] {
      if constexpr (Shape.sleep) {
        return std::make_tuple(o.duration);
      } else {
        return std::tuple<>();
      }
    }();
    auto arguments = std::tuple_cat(std::move(sends), std::move(receives), std::move(nexts), std::move(sleep));
    auto r = co_await std::apply([](auto&... a) { return coral::when_any(std::move(a)...); }, arguments);
    winner = r.index();
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            if (I != winner) return;
            if constexpr (I >= S && I < S + R) {
              item v = std::move(std::get<I>(r));
              w.received(v, o.branches[I], "a select's receive");
            } else if constexpr (I >= S + R && I < S + R + N) {
              auto& v = std::get<I>(r);
              if (v) {
                w.received(*v, o.branches[I], "a select's next");
              } else if (!w.plain_closes[static_cast<std::size_t>(o.branches[I])]) {
                w.fail("a select's next() on channel " + std::to_string(o.branches[I]) + " in task " +
                       std::to_string(task) + " gave nullopt, but the channel was not closed without a cause");
              }
            } else if constexpr (I == S + R + N) {
              w.count(stat::sleeps_won);
            }
          }(),
          ...);
    }
    (std::make_index_sequence<std::variant_size_v<decltype(r)>>{});
  } catch (...) {
    error = std::current_exception();
  }
  w.count(stat::selects);
  for (int b = 0; b < S; ++b) {
    const bool won = !error && winner == static_cast<std::size_t>(b);
    w.resolve(ids[b], won);
    if (!won && ids[b] >= 0 && ledger[static_cast<std::size_t>(ids[b])].destroyed == 0) {
      w.count(stat::late_loser_values);
      if (check_losing_values_destroyed_when_select_returns) {
        w.fail("the value of a losing send of a select in task " + std::to_string(task) +
               " was still alive when the select returned");
      }
    }
  }
  co_return w.judge(task, aborted_seen, error, sending, receiving, Shape.sleep, true, "a select");
}

using select_runner = coral::task<outcome> (*)(world&, int, bool&, const op&);
inline constexpr auto select_runners = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<select_runner, sizeof...(I)>{&run_select<select_shapes[I]>...};
}
(std::make_index_sequence<select_shape_count>{});

// ---------------------------------------------------------------------------------------------
// A task of the program.

inline coral::task<> run_task(world& w, int index) {
  frame_count frame(w);
  bool aborted_seen = false;
  for (const op& o : w.prog.tasks[static_cast<std::size_t>(index)].ops) {
    const int c = o.channel;
    const unsigned bit = 1u << c;
    auto& ch = w.ch(c);
    long id = -1;
    std::exception_ptr error;
    switch (o.kind) {
      case op_kind::send:
      case op_kind::send_operator:
      case op_kind::timed_send: {
        try {
          if (o.kind == op_kind::send) {
            co_await ch.send(w.make(id, c));
          } else if (o.kind == op_kind::send_operator) {
            co_await (ch << w.make(id, c));
          } else {
            co_await coral::with_timeout(o.duration, ch.send(w.make(id, c)));
          }
        } catch (...) {
          error = std::current_exception();
        }
        w.resolve(id, !error);
        if (error) w.count(stat::failed_sends);
        w.judge(index, aborted_seen, error, bit, 0, o.kind == op_kind::timed_send, true, "a send");
        break;
      }
      case op_kind::receive:
      case op_kind::timed_receive: {
        try {
          if (o.kind == op_kind::receive) {
            item v = co_await ch.receive();
            w.received(v, c, "receive");
          } else {
            item v = co_await coral::with_timeout(o.duration, ch.receive());
            w.received(v, c, "receive (with a timeout)");
          }
        } catch (...) {
          error = std::current_exception();
        }
        w.judge(index, aborted_seen, error, 0, bit, o.kind == op_kind::timed_receive, true, "a receive");
        break;
      }
      case op_kind::receive_operator: {
        try {
          item target(item::placeholder);
          co_await (ch >> target);
          w.received(target, c, "receive (>>)");
        } catch (...) {
          error = std::current_exception();
        }
        w.judge(index, aborted_seen, error, 0, bit, false, true, "a receive (>>)");
        break;
      }
      case op_kind::next: {
        try {
          std::optional<item> v = co_await ch.next();
          if (v) {
            w.received(*v, c, "next");
          } else if (!w.plain_closes[static_cast<std::size_t>(c)]) {
            w.fail("next() on channel " + std::to_string(c) + " in task " + std::to_string(index) +
                   " gave nullopt, but the channel was not closed without a cause");
          }
        } catch (...) {
          error = std::current_exception();
        }
        w.judge(index, aborted_seen, error, 0, bit, false, true, "next()");
        break;
      }
      case op_kind::try_send: {
        item v = w.make(id, c);
        const bool sent = ch.try_send(v);
        w.resolve(id, sent);
        if (sent != (v.id == item::empty)) {
          w.fail("try_send on channel " + std::to_string(c) + " returned " + (sent ? "true" : "false") +
                 (sent ? " but left the value with the caller" : " but took the value"));
        }
        if (!sent) w.count(stat::failed_sends);
        break;
      }
      case op_kind::try_receive: {
        if (auto v = ch.try_receive()) w.received(*v, c, "try_receive");
        break;
      }
      case op_kind::close:
        w.plain_closes[static_cast<std::size_t>(c)] = true;
        ch.close();
        break;
      case op_kind::close_with_cause:
        w.cause_closes[static_cast<std::size_t>(c)] = true;
        ch.close(std::make_exception_ptr(closed_with_cause(c)));
        break;
      case op_kind::select: {
        outcome result = outcome::ok;
        try {
          result = co_await select_runners[static_cast<std::size_t>(o.shape)](w, index, aborted_seen, o);
        } catch (...) {
          // The child did not start: the task was cancelled before (no value was made).
          error = std::current_exception();
        }
        if (error) w.judge(index, aborted_seen, error, 0, 0, false, true, "a select (as a child task)");
        (void)result;
        break;
      }
      case op_kind::yield:
        try {
          co_await coral::yield();
        } catch (...) {
          error = std::current_exception();
        }
        w.judge(index, aborted_seen, error, 0, 0, false, true, "yield()");
        break;
      case op_kind::count:
        break;
    }
  }
  w.finished[static_cast<std::size_t>(index)] = true;
}

// ---------------------------------------------------------------------------------------------
// Running a program on an executor kind.

// Where the tasks run, and how the driving thread lets them run, ends and destroys it.
class place {
 public:
  place(executor_kind kind, bool two_contexts) : kind_(kind) {
    switch (kind) {
      case executor_kind::stepped:
        io_.emplace();
        if (two_contexts) second_.emplace();
        break;
      case executor_kind::io_context_1_thread:
      case executor_kind::io_context_2_threads:
        running_.emplace(kind == executor_kind::io_context_1_thread ? 1 : 2);
        break;
      case executor_kind::pool_strands:
        pool_.emplace(2);
        break;
      default:
        break;
    }
  }
  ~place() { destroy(); }

  executor_kind kind() const noexcept { return kind_; }
  bool stepped() const noexcept { return kind_ == executor_kind::stepped; }
  bool destroyable() const noexcept { return io_ || running_ || pool_; }

  asio::any_io_executor executor_for_task(std::size_t task) {
    if (second_ && task % 2 == 1) return second_->get_executor();
    switch (kind_) {
      case executor_kind::pool_strands:
        return asio::make_strand(pool_->get_executor());
      case executor_kind::inline_exec:
        return coral::inline_executor{};
      case executor_kind::pool_exec:
        return coral::pool_executor{};
      default:
        return running_ ? running_->get_executor() : io_->get_executor();
    }
  }

  // Lets the tasks run: `n` handlers when stepped, else a few yields of the driving thread.
  void run(int n) {
    for (int i = 0; i < n; ++i) {
      if (stepped()) {
        // Alternates between the contexts, so that wake-ups cross from one to the other.
        auto& first = second_ && i % 2 == 1 ? *second_ : *io_;
        auto& other = second_ && i % 2 == 0 ? *second_ : *io_;
        if (first.poll_one() == 0 && other.poll_one() == 0) return;
      } else {
        std::this_thread::yield();
      }
    }
  }

  // Stepped: runs handlers and expired timers until `done()` or nothing is left to run soon.
  template <class Done>
  void settle(Done done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < give_up) {
      std::size_t ran = 0;
      for (auto* io : {io_ ? &*io_ : nullptr, second_ ? &*second_ : nullptr}) {
        if (io) ran += io->poll();
      }
      if (ran == 0 && !done()) {
        // Only timers can still be pending: wait for the next one, boundedly. A context that ran
        // out of work has nothing left to run.
        bool working = false;
        for (auto* io : {io_ ? &*io_ : nullptr, second_ ? &*second_ : nullptr}) {
          if (!io || io->stopped()) continue;
          working = true;
          io->run_one_for(std::chrono::milliseconds(10));
        }
        if (!working) return;
      }
    }
  }

  // Stepped: runs whatever is ready, without waiting for timers, until nothing is.
  void run_until_idle() {
    for (int round = 0; round < 100000; ++round) {
      std::size_t ran = 0;
      for (auto* io : {io_ ? &*io_ : nullptr, second_ ? &*second_ : nullptr}) {
        if (io) ran += io->poll();
      }
      if (ran == 0) return;
    }
  }

  bool has_second_context() const noexcept { return second_.has_value(); }
  // Destroys the first context only (stepped, with two contexts).
  void destroy_first() { io_.reset(); }

  // Destroys the execution context with whatever still waits on it.
  void destroy() {
    second_.reset();
    io_.reset();
    running_.reset();
    if (pool_) {
      pool_->stop();
      pool_->join();
      pool_.reset();
    }
  }

 private:
  executor_kind kind_;
  std::optional<asio::io_context> io_;  // stepped
  std::optional<asio::io_context> second_;
  std::optional<coral_test::running_io_context> running_;  // the threaded io_context kinds
  std::optional<asio::thread_pool> pool_;
};

// A bound on waiting for a job in the threaded kinds: generous for a loaded sanitizer build.
inline constexpr auto patience = std::chrono::seconds(30);

inline bool job_ended(coral::job<>& j, bool may_block) {
  if (j.done() || !may_block) return j.done();
  try {
    return j.wait_for(patience);
  } catch (const std::logic_error&) {
    return j.done();  // (the job's executor runs on this thread: it cannot be waited for here)
  }
}

// Runs `p` on `kind` and checks the rules; the report lists every broken rule.
inline report run(const program& p, executor_kind kind) {
  reset_ledger();
  report result;
  std::vector<coral::job<>> jobs;
  {
    world w(p);
    {
      place where(kind, p.two_contexts);
      for (std::size_t t = 0; t < p.tasks.size(); ++t) {
        jobs.push_back(coral::spawn(where.executor_for_task(t), run_task(w, static_cast<int>(t))));
      }
      for (const step& s : p.steps) {
        switch (s.kind) {
          case step_kind::run:
            where.run(s.target);
            break;
          case step_kind::cancel:
            w.cancels[static_cast<std::size_t>(s.target)] = true;
            jobs[static_cast<std::size_t>(s.target)].cancel();
            break;
          case step_kind::close:
            w.plain_closes[static_cast<std::size_t>(s.target)] = true;
            w.ch(s.target).close();
            break;
          case step_kind::close_with_cause:
            w.cause_closes[static_cast<std::size_t>(s.target)] = true;
            w.ch(s.target).close(std::make_exception_ptr(closed_with_cause(s.target)));
            break;
          case step_kind::try_send: {
            long id = -1;
            item v = w.make(id, s.target);
            const bool sent = w.ch(s.target).try_send(std::move(v));
            w.resolve(id, sent);
            break;
          }
          case step_kind::try_receive:
            if (auto v = w.ch(s.target).try_receive()) w.received(*v, s.target, "the driver's try_receive");
            break;
          case step_kind::count:
            break;
        }
        for (std::size_t c = 0; c < p.channels.size(); ++c) {
          const std::size_t size = w.ch(static_cast<int>(c)).size();
          if (p.channels[c].bounded_size() && size > p.channels[c].max_size()) {
            w.fail("channel " + std::to_string(c) + " holds " + std::to_string(size) + " values, more than " +
                   std::to_string(p.channels[c].max_size()));
          }
        }
      }

      if (p.settle_first && where.stepped()) where.run_until_idle();
      ending end = p.end;
      if (end == ending::destroy_context && !where.destroyable()) end = ending::cancel_all;
      const auto all_ended = [&] {
        for (auto& j : jobs) {
          if (!j.done()) return false;
        }
        return true;
      };
      if (end == ending::close_all) {
        for (std::size_t c = 0; c < p.channels.size(); ++c) {
          w.plain_closes[c] = true;
          w.ch(static_cast<int>(c)).close();
        }
      } else if (end == ending::cancel_all) {
        for (std::size_t t = 0; t < jobs.size(); ++t) {
          w.cancels[t] = true;
          jobs[t].cancel();
        }
      }
      // Two contexts, one destroyed: the tasks of the other go on, closes and cancels reach them
      // (and must not touch the dead context's tasks); then they must all end.
      const bool survivors = end == ending::destroy_context && where.has_second_context();
      if (survivors) {
        where.destroy_first();
        for (std::size_t t = 0; t < jobs.size(); t += 2) {
          if (!jobs[t].done()) w.fail("task " + std::to_string(t) + " is not done after its context was destroyed");
        }
        for (std::size_t c = 0; c < p.channels.size(); ++c) {
          w.plain_closes[c] = true;
          w.ch(static_cast<int>(c)).close();
        }
      }
      if (end != ending::destroy_context || survivors) {
        if (where.stepped()) where.settle(all_ended);
        for (std::size_t t = 0; t < jobs.size(); ++t) {
          if (!job_ended(jobs[t], !where.stepped())) {
            w.fail("task " + std::to_string(t) + " did not end after " +
                   (end == ending::cancel_all ? "it was cancelled" : "every channel was closed"));
          }
        }
        if (!all_ended()) {
          // Leaving a task running would let it touch this run's state after it is gone.
          std::fprintf(stderr, "%s\non %s:\n", describe(p).c_str(), name_of(kind));
          for (auto& f : w.take_failures()) std::fprintf(stderr, "  %s\n", f.c_str());
          std::abort();
        }
        for (std::size_t t = survivors ? 1 : 0; t < jobs.size(); t += survivors ? 2 : 1) {
          if (!w.finished[t]) w.fail("task " + std::to_string(t) + " ended without running to its end");
        }
      }
      where.destroy();
      for (std::size_t t = 0; t < jobs.size(); ++t) {
        if (!job_ended(jobs[t], true)) {
          w.fail("task " + std::to_string(t) + " is not done after its execution context was destroyed");
        }
      }
      if (!all_ended()) {
        std::fprintf(stderr, "%s\non %s: tasks still running after their context was destroyed\n", describe(p).c_str(),
                     name_of(kind));
        std::abort();
      }
      // A job that reports done has let go of its task.
      for (auto& j : jobs) {
        try {
          j.get_result();
        } catch (const std::exception& e) {
          if (end != ending::destroy_context) w.fail(std::string("a task failed: ") + e.what());
        }
      }
    }
    if (w.frames != 0) w.fail(std::to_string(w.frames.load()) + " task frames not freed");

    // What is still buffered is drained: it was delivered.
    for (std::size_t c = 0; c < p.channels.size(); ++c) {
      while (auto v = w.ch(static_cast<int>(c)).try_receive()) {
        if (v->id < 0) {
          w.fail("channel " + std::to_string(c) + " held a payload that was never sent");
          continue;
        }
        ++ledger[static_cast<std::size_t>(v->id)].drained;
        w.count(stat::drained);
      }
    }
    w.channels.clear();

    if (counts.constructed != counts.destroyed) {
      // Destroyed later by another thread, or never: a bounded wait tells which.
      const long alive = counts.constructed - counts.destroyed;
      long values_alive = 0;
      for (long id = 0; id < next_value.load(); ++id)
        values_alive += ledger[static_cast<std::size_t>(id)].destroyed == 0;
      const long defaults_alive = counts.default_alive;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (counts.constructed != counts.destroyed && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
      if (counts.constructed == counts.destroyed) {
        w.set(stat::late_payloads, alive);
        w.set(stat::late_values, values_alive);
        w.set(stat::late_defaults, defaults_alive);
        if (check_payloads_destroyed_when_jobs_done) {
          w.fail(std::to_string(alive) + " payload objects (" + std::to_string(values_alive) + " holding a value, " +
                 std::to_string(defaults_alive) + " default-constructed) were destroyed after every job reported done");
        }
      }
    }
    const long values = next_value.load();
    for (long id = 0; id < values; ++id) {
      const value_record& r = ledger[static_cast<std::size_t>(id)];
      const int c = r.channel;
      const std::string name = "value " + std::to_string(id) + " (sent on channel " + std::to_string(c) + ")";
      const int taken = r.received + r.drained;
      if (r.destroyed != 1) w.fail(name + " was destroyed " + std::to_string(r.destroyed.load()) + " times");
      if (taken > 1) w.fail(name + " was received " + std::to_string(taken) + " times");
      if (r.received > 0 && r.received_on != c) {
        w.fail(name + " was received on channel " + std::to_string(r.received_on.load()));
      }
      switch (r.send.load()) {
        case delivered:
          if (taken == 0) {
            if (p.channels[static_cast<std::size_t>(c)].drops()) {
              w.count(stat::dropped);
            } else if (p.end == ending::destroy_context) {
              // Handed to a waiting receiver whose task was destroyed with its context before it
              // resumed: the value went with the task's frame.
              w.count(stat::in_flight);
            } else {
              w.fail(name + ": its send succeeded, but no one received it and it is not buffered (lost)");
            }
          }
          break;
        case not_delivered:
          if (taken != 0) w.fail(name + ": its send failed or lost its race, yet the value was received");
          break;
        default:
          if (p.end != ending::destroy_context) w.fail(name + ": its send never completed");
          break;
      }
    }
    if (counts.constructed != counts.destroyed) {
      w.fail("payload objects constructed " + std::to_string(counts.constructed.load()) + ", destroyed " +
             std::to_string(counts.destroyed.load()));
    }
    if (check_no_default_constructed_values && counts.default_constructed != 0) {
      w.fail(std::to_string(counts.default_constructed.load()) +
             " payloads default-constructed by coral (values the program never sent)");
    }
    w.set(stat::values, values);
    w.set(stat::made_by_default, counts.default_constructed);
    w.set(stat::programs, 1);
    result.failures = w.take_failures();
    result.stats = w.snapshot();
  }
  return result;
}

}  // namespace coral_fuzz
