#include "coral/task_tracking.hpp"

#include <algorithm>
#include <boost/core/demangle.hpp>
#include <boost/intrusive/list.hpp>
#define BOOST_LOCALE_NO_LIB  // (only its header-only UTF-8 decoder is used: no library to link)
#include <boost/locale/utf.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <span>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace coral {
namespace detail {

#if CORAL_TASK_TRACKING
extern const int coral_library_built_with_CORAL_TASK_TRACKING = 1;
#else
extern const int coral_library_built_without_CORAL_TASK_TRACKING = 1;
#endif

namespace {

bool tracking_from_environment() noexcept {
  const char* v = std::getenv("CORAL_TASK_TRACKING");
  return CORAL_TASK_TRACKING && v && std::strcmp(v, "1") == 0;
}

// The live records, newest first. Never destroyed: tasks end during static destruction too
// (the default executors shut down).
struct registry {
  std::mutex mutex;
  boost::intrusive::list<task_record> records;
  std::uint64_t last_id = 0;
};
registry& the_registry() {
  static registry* const r = new registry;
  return *r;
}

struct stall_detector {
  std::atomic<std::int64_t> threshold_ns{0};
  std::mutex mutex;
  // Shared so that a report in flight keeps the function it started with while another is set.
  std::shared_ptr<const std::function<void(const stall_report&)>> report;
};
stall_detector& the_detector() {
  static stall_detector* const d = new stall_detector;
  return *d;
}

// The index just past the bracket that closes the one at `open` ('(' or '<'), or npos.
std::size_t past_closing(std::string_view s, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '<') ++depth;
    if ((s[i] == ')' || s[i] == '>') && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// A function's name as a reader looks for it in a dump: its qualified name, without its return
// type, template arguments (`<...>`) or parameters, as the compilers' full names have them
// (`coral::task<> app::fetch(Socket&) [with Socket = ...]` is `app::fetch`; a lambda keeps where it
// is: `app::run(...)::<lambda()>`). Inside a coroutine, g++ names the function that runs its body
// (`void f(f(int)::_Z1fi.Frame*)`): its parameter's type begins with the coroutine's own name,
// which is what is kept.
std::string readable_function(const char* function) {
  if (!function) return {};
  std::string_view name(function);
  constexpr std::string_view frame_suffix = ".Frame*)";
  if (const auto mangled = name.rfind("::_Z"); mangled != std::string_view::npos && name.ends_with(frame_suffix)) {
    // The parameter list's opening parenthesis: the first one, from the right, left unmatched.
    int depth = 0;
    for (auto i = mangled; i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth < 0) {
        name = name.substr(i + 1, mangled - i - 1);
        break;
      }
    }
  }
  if (const auto with = name.find(" [with "); with != std::string_view::npos) name = name.substr(0, with);
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    const char c = name[i];
    const bool after_scope = out.ends_with("::");
    if (c == ' ' && !out.empty() && out.back() != ',') {
      out.clear();  // what came before a space at this level was the return type
      ++i;
    } else if ((c == '<' || c == '(') && out.ends_with("operator")) {
      out += c;  // operator<, operator()
      ++i;
    } else if (c == '<' || c == '(') {
      const auto end = past_closing(name, i);
      if (end == std::string_view::npos) break;
      const std::string_view inside = name.substr(i + 1, end - i - 2);
      if (after_scope) {
        // A lambda or an anonymous class, named by where it is: `<lambda(...)>`, `(anonymous class)`.
        const auto parameters = inside.find('(');
        if (c == '<' && parameters != std::string_view::npos) {
          out += '<';
          out += inside.substr(0, parameters);
          out += inside.ends_with("()") ? "()>" : "(...)>";
        } else {
          out += name.substr(i, end - i);
        }
      } else if (c == '<') {
        out += "<...>";
      } else {
        // Parameters: gone at the end (with a trailing `const`), `(...)` inside a longer name.
        const std::string_view rest = name.substr(end);
        if (rest.empty() || rest == " const") break;
        out += inside.empty() ? "()" : "(...)";
      }
      i = end;
    } else {
      out += c;
      ++i;
    }
  }
  return out.empty() ? std::string(name) : out;
}

std::string where(const char* file, const char* function, std::uint32_t line) {
  if (!file) return "?";
  std::string s = file;
  s += ':';
  s += std::to_string(line);
  if (function && *function) {
    s += " in ";
    s += readable_function(function);
  }
  return s;
}
std::string where(const source_place& l) {
  return where(l.file, l.function, l.line);
}

std::string describe_executor(executor_kind kind, const void* context, const std::type_info* type, bool strand) {
  char address[32];
  std::snprintf(address, sizeof address, "%p", context);
  std::string s;
  switch (kind) {
    case executor_kind::io_context:
      s = std::string("io_context ") + address;
      break;
    case executor_kind::thread_pool:
      s = std::string("thread_pool ") + address;
      break;
    case executor_kind::other:
      s = (type ? boost::core::demangle(type->name()) : std::string("executor")) + " on context " + address;
      break;
  }
  if (strand) s += " (strand)";
  return s;
}

// The reports noted on this thread and not yet made (see flush_stall_reports).
thread_local std::vector<stall_report> pending_stall_reports;

void report_stall(const task_record& record, stall_report::kind what, std::int64_t duration_ns, std::string to) {
  stall_report report{what,
                      record.id,
                      {},
                      std::chrono::nanoseconds(duration_ns),
                      describe_executor(record.context_kind, record.context, record.executor_type, record.strand),
                      record.resumed_from.file ? where(record.resumed_from) : "its start",
                      std::move(to),
                      {}};
  {
    std::lock_guard lock(the_registry().mutex);
    report.task_name = record.name;
    if (what == stall_report::kind::queued_too_long) {
      for (const task_record& t : the_registry().records) {
        if (&t != &record && t.context == record.context &&
            t.current.load(std::memory_order_relaxed) == task_record::state::queued) {
          report.also_queued.push_back(t.id);
        }
      }
    }
  }
  pending_stall_reports.push_back(std::move(report));
}

// Reports what report_stall() noted on this thread: at the end of a task's run, where no lock of
// coral's is held (a task suspends inside waits that hold one, such as a task_group's join).
void flush_stall_reports() noexcept {
  auto reports = std::exchange(pending_stall_reports, {});
  for (const auto& report : reports) {
    std::shared_ptr<const std::function<void(const stall_report&)>> f;
    {
      // (Switched off meanwhile: nothing is reported.)
      std::lock_guard lock(the_detector().mutex);
      if (the_detector().threshold_ns.load(std::memory_order_relaxed) == 0) return;
      f = the_detector().report;
    }
    try {
      if (f && *f) {
        (*f)(report);
      } else {
        std::fprintf(stderr, "%s\n", to_string(report).c_str());
      }
    } catch (...) {
      std::fprintf(stderr, "coral: the stall report threw an exception (ignored)\n");
    }
  }
}

using exception_hook = std::function<void(const std::exception_ptr&, const exception_trace&)>;
struct exception_hook_slot {
  std::atomic<bool> set{false};
  std::mutex mutex;
  std::shared_ptr<const exception_hook> hook;
};
exception_hook_slot& the_exception_hook() {
  static exception_hook_slot* const h = new exception_hook_slot;
  return *h;
}

}  // namespace

struct failure_note {
  std::exception_ptr exception;
  exception_trace trace;
};

void drop_failure_note(failure_note* note) noexcept {
  delete note;
}

namespace {
// Frees the thread's pending note when the thread ends.
struct rethrown_note_owner {
  ~rethrown_note_owner() { drop_failure_note(std::exchange(rethrown_failure_note, nullptr)); }
};
bool is_being_handled(const failure_note* note) noexcept {
  return note && std::current_exception() == note->exception;
}
}  // namespace

void pass_on_failure_note(failure_note_ptr note) noexcept {
  static thread_local rethrown_note_owner owner;
  static_cast<void>(owner);
  drop_failure_note(std::exchange(rethrown_failure_note, note.release()));
}

void forget_caught_failure() noexcept {
  if (!is_being_handled(rethrown_failure_note)) drop_failure_note(std::exchange(rethrown_failure_note, nullptr));
}

failure_note_ptr record_failure(task_record& record, std::uint16_t depth) noexcept {
#if !CORAL_TASK_TRACKING
  static_cast<void>(record), static_cast<void>(depth);
  return nullptr;
#else
  try {
    // The note of the exception rethrown to this coroutine, if this is that exception (another one,
    // thrown inside a catch block that may still rethrow the first, leaves that note in place).
    failure_note_ptr note;
    if (is_being_handled(rethrown_failure_note)) note.reset(std::exchange(rethrown_failure_note, nullptr));
    if (!note) note.reset(new failure_note{std::current_exception(), {}});
    exception_trace& trace = note->trace;
    std::string name;
    {
      std::lock_guard lock(the_registry().mutex);
      name = record.name;
    }
    auto step = [&](exception_step::kind what, std::string location, std::uint64_t awaited_by) {
      trace.push_back({what, record.id, name, std::move(location), awaited_by});
    };
    auto frame = [&](std::uint16_t i) -> std::string {
      if (i >= task_record::max_frames) return "";
      const auto& f = record.frames[i];
      const char* file = f.file.load(std::memory_order_relaxed);
      return file ? where(file, f.function.load(std::memory_order_relaxed), f.line.load(std::memory_order_relaxed))
                  : "";
    };
    using kind = exception_step::kind;
    // From another task (a child, a join's branch, a group member): it came out of this
    // coroutine's co_await of that task first.
    if (!trace.empty() && trace.back().task_id != record.id) step(kind::came_out_of_co_await, frame(depth), 0);
    if (depth > 0) {
      step(kind::came_out_of_co_await, frame(static_cast<std::uint16_t>(depth - 1)), 0);
    } else {
      step(kind::ended_task, record.spawned_at.file ? where(record.spawned_at) : "", record.parent);
    }
    exception_hook_slot& h = the_exception_hook();
    if (h.set.load(std::memory_order_acquire)) {
      std::shared_ptr<const exception_hook> hook;
      {
        std::lock_guard lock(h.mutex);
        hook = h.hook;
      }
      try {
        if (hook) (*hook)(note->exception, trace);
      } catch (...) {
        std::fprintf(stderr, "coral: the exception hook threw an exception (ignored)\n");
      }
    }
    return note;
  } catch (...) {
    return nullptr;  // (out of memory: the exception goes on without its trace)
  }
#endif
}

void print_failure_trace(const failure_note* note) noexcept {
  if (!note || note->trace.empty()) return;
  try {
    std::fprintf(stderr, "%s", to_string(note->trace).c_str());
  } catch (...) {
  }
}

std::atomic<bool> task_tracking_on{tracking_from_environment()};

const char* to_string(wait_kind kind) noexcept {
  switch (kind) {
    case wait_kind::none:
      return "nothing";
    case wait_kind::child_task:
      return "child task";
    case wait_kind::join:
      return "join";
    case wait_kind::group_join:
      return "task_group join";
    case wait_kind::sleep:
      return "sleep";
    case wait_kind::yield:
      return "yield";
    case wait_kind::asio_operation:
      return "asio operation";
    case wait_kind::asio_awaitable:
      return "asio::awaitable";
    case wait_kind::channel_send:
      return "channel send";
    case wait_kind::channel_receive:
      return "channel receive";
    case wait_kind::mutex_lock:
      return "mutex lock";
    case wait_kind::semaphore_acquire:
      return "semaphore acquire";
    case wait_kind::event_wait:
      return "event wait";
    case wait_kind::latch_wait:
      return "latch wait";
    case wait_kind::barrier_wait:
      return "barrier wait";
    case wait_kind::watch_changed:
      return "watch changed";
    case wait_kind::shared_mutex_lock:
      return "shared_mutex lock";
    case wait_kind::shared_mutex_lock_shared:
      return "shared_mutex lock_shared";
    case wait_kind::condition_wait:
      return "condition_variable wait";
    case wait_kind::future:
      return "future";
    case wait_kind::awaiter:
      return "awaiter";
    case wait_kind::async_generator:
      return "async_generator next";
    case wait_kind::foreign:
      return "foreign awaitable";
  }
  return "?";
}

task_record* make_record(std::uint64_t parent, std::uint64_t spawned_by, const code_location& where,
                         const void* context, const std::type_info* executor_type, executor_kind kind, bool strand) {
  auto record = std::make_unique<task_record>();
  record->parent = parent;
  record->spawned_by = spawned_by;
  record->spawned_at = where.place();
  record->context = context;
  record->executor_type = executor_type;
  record->context_kind = kind;
  record->strand = strand;
  record->created_ns = now_ns();
  record->since_ns.store(record->created_ns, std::memory_order_relaxed);
  record->resumed_at_ns = record->created_ns;
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  record->id = ++r.last_id;
  r.records.push_front(*record);
  return record.release();
}

void free_record(task_record* record) noexcept {
  // A task ends inside its own run, which may then resume others on this stack (a join's
  // parent): they must not take it for the task they run inside.
  if (running_record == record) running_record = nullptr;
  {
    registry& r = the_registry();
    std::lock_guard lock(r.mutex);
    r.records.erase(r.records.iterator_to(*record));
  }
  delete record;
}

namespace {
// `name` with every control character and every byte that is not part of a well-formed UTF-8
// sequence (RFC 3629: no overlong form, surrogate or code point past U+10FFFF) replaced by '?':
// a name cannot add a line to a text dump or break the JSON one.
std::string printable(std::string name) {
  using utf8 = boost::locale::utf::utf_traits<char>;
  const char* const end = name.data() + name.size();
  for (std::size_t i = 0; i < name.size();) {
    const char* next = name.data() + i;
    const boost::locale::utf::code_point c = utf8::decode(next, end);
    if (c == boost::locale::utf::illegal || c == boost::locale::utf::incomplete || c < 0x20 || c == 0x7f) {
      name[i++] = '?';
    } else {
      i = static_cast<std::size_t>(next - name.data());
    }
  }
  return name;
}
}  // namespace

void rename_record(task_record& record, std::string name) {
  name = printable(std::move(name));
  std::lock_guard lock(the_registry().mutex);
  record.name = std::move(name);
}

void record_suspend(task_record& record) noexcept {
  const std::int64_t now = now_ns();
  const std::int64_t ran = now - record.resumed_at_ns;
  record.busy_ns.fetch_add(ran, std::memory_order_relaxed);
  record.current.store(task_record::state::suspended, std::memory_order_relaxed);
  record.since_ns.store(now, std::memory_order_relaxed);
  record.resumed_at_ns = now;  // (the suspension may complete at once: then it runs on from here)
  const std::int64_t threshold = the_detector().threshold_ns.load(std::memory_order_relaxed);
  if (threshold > 0 && ran > threshold && !(record.stalls_reported & 1)) {
    record.stalls_reported |= 1;
    const auto depth = record.depth.load(std::memory_order_relaxed);
    std::string to = "its end";
    if (depth > 0 && depth <= task_record::max_frames) {
      const auto& f = record.frames[depth - 1];
      to = where(f.file.load(std::memory_order_relaxed), f.function.load(std::memory_order_relaxed),
                 f.line.load(std::memory_order_relaxed));
    }
    try {
      report_stall(record, stall_report::kind::ran_too_long, ran, std::move(to));
    } catch (...) {
    }
  }
}

void record_queued(task_record& record) noexcept {
  record.current.store(task_record::state::queued, std::memory_order_relaxed);
  record.since_ns.store(now_ns(), std::memory_order_relaxed);
}

void begin_run(task_record& record) noexcept {
  const std::int64_t now = now_ns();
  // (Not its start: a task spawned before its executor runs has not been held up by anything.)
  const auto state = record.current.load(std::memory_order_relaxed);
  const bool was_queued = state == task_record::state::queued && record.resumes.load(std::memory_order_relaxed) > 0;
  std::int64_t waited = was_queued ? now - record.since_ns.load(std::memory_order_relaxed) : 0;
  // A sleep's completion is queued inside Asio, out of coral's sight: it waited from its deadline.
  if (state == task_record::state::suspended && record.waits_on.load(std::memory_order_relaxed) == wait_kind::sleep) {
    waited = now - record.wait_detail.load(std::memory_order_relaxed);
  }
  record.current.store(task_record::state::running, std::memory_order_relaxed);
  record.since_ns.store(now, std::memory_order_relaxed);
  record.resumes.fetch_add(1, std::memory_order_relaxed);
  record.resumed_at_ns = now;
#if CORAL_TASK_TRACKING
  const auto depth = record.depth.load(std::memory_order_relaxed);
  if (depth > 0 && depth <= task_record::max_frames) {
    const auto& f = record.frames[depth - 1];
    record.resumed_from = {f.file.load(std::memory_order_relaxed), f.function.load(std::memory_order_relaxed),
                           f.line.load(std::memory_order_relaxed)};
  } else {
    record.resumed_from = {};
  }
#endif
  running_record = &record;
  const std::int64_t threshold = the_detector().threshold_ns.load(std::memory_order_relaxed);
  if (threshold > 0 && waited > threshold && !(record.stalls_reported & 2)) {
    record.stalls_reported |= 2;
    try {
      report_stall(record, stall_report::kind::queued_too_long, waited, where(record.resumed_from));
    } catch (...) {
    }
  }
}

void end_run(task_record* outer, std::int64_t began_ns) noexcept {
  // The tasks resumed on this stack ran in the outer task's time: not its own.
  if (outer) outer->resumed_at_ns += now_ns() - began_ns;
  running_record = outer;
  if (!pending_stall_reports.empty()) [[unlikely]] {
    const std::int64_t reporting = now_ns();
    flush_stall_reports();
    if (outer) outer->resumed_at_ns += now_ns() - reporting;  // (the reports' own time is not the task's)
  }
}

}  // namespace detail

namespace {

struct frame_snapshot {
  const char* file;
  const char* function;
  std::uint32_t line;
};

// A live task's record as it was at the dump, copied under the registry's lock; made readable
// (source places, executor names) only for the tasks a dump lists.
struct task_snapshot {
  std::uint64_t id, parent, spawned_by;
  std::string name;
  detail::source_place spawned_at;
  detail::executor_kind context_kind;
  const void* context;
  const std::type_info* executor_type;
  bool strand;
  detail::task_record::state state;
  detail::wait_kind waits_on;
  std::int64_t wait_detail, since_ns, created_ns, busy_ns;
  std::uint64_t resumes;
  std::uint16_t depth;
  frame_snapshot frames[detail::task_record::max_frames];  // innermost first

  std::span<const frame_snapshot> recorded_frames() const noexcept {
    return {frames, std::min<std::size_t>(depth, detail::task_record::max_frames)};
  }
  std::string spawned_at_text() const { return detail::where(spawned_at); }
  std::string executor_text() const { return detail::describe_executor(context_kind, context, executor_type, strand); }
};

std::vector<task_snapshot> snapshot_tasks() {
  std::vector<task_snapshot> tasks;
  auto& r = detail::the_registry();
  std::lock_guard lock(r.mutex);
  tasks.reserve(r.records.size());
  for (const detail::task_record& record : r.records) {
    const detail::task_record* t = &record;
    task_snapshot& c = tasks.emplace_back();
    c.id = t->id;
    c.parent = t->parent;
    c.spawned_by = t->spawned_by;
    c.name = t->name;
    c.spawned_at = t->spawned_at;
    c.context_kind = t->context_kind;
    c.context = t->context;
    c.executor_type = t->executor_type;
    c.strand = t->strand;
    c.state = t->current.load(std::memory_order_relaxed);
    c.waits_on = t->waits_on.load(std::memory_order_relaxed);
    c.wait_detail = t->wait_detail.load(std::memory_order_relaxed);
    c.since_ns = t->since_ns.load(std::memory_order_relaxed);
    c.created_ns = t->created_ns;
    c.busy_ns = t->busy_ns.load(std::memory_order_relaxed);
    c.resumes = t->resumes.load(std::memory_order_relaxed);
    c.depth = t->depth.load(std::memory_order_relaxed);
    const auto recorded = std::min<std::uint16_t>(c.depth, detail::task_record::max_frames);
    for (std::uint16_t i = 0; i < recorded; ++i) {
      const auto& f = t->frames[recorded - 1 - i];  // innermost first
      c.frames[i] = {f.file.load(std::memory_order_relaxed), f.function.load(std::memory_order_relaxed),
                     f.line.load(std::memory_order_relaxed)};
    }
  }
  return tasks;
}

const char* state_name(detail::task_record::state s) {
  switch (s) {
    case detail::task_record::state::queued:
      return "queued";
    case detail::task_record::state::running:
      return "running";
    case detail::task_record::state::suspended:
      return "suspended";
  }
  return "?";
}

bool detail_is_object(detail::wait_kind k) {
  using detail::wait_kind;
  return k == wait_kind::channel_send || k == wait_kind::channel_receive || k == wait_kind::mutex_lock ||
         k == wait_kind::semaphore_acquire || k == wait_kind::event_wait || k == wait_kind::latch_wait ||
         k == wait_kind::barrier_wait || k == wait_kind::watch_changed || k == wait_kind::shared_mutex_lock ||
         k == wait_kind::shared_mutex_lock_shared || k == wait_kind::condition_wait;
}

std::string seconds(std::int64_t ns) {
  char s[32];
  if (ns < 1'000'000) {
    std::snprintf(s, sizeof s, "%.1f us", static_cast<double>(ns) / 1e3);
  } else if (ns < 1'000'000'000) {
    std::snprintf(s, sizeof s, "%.1f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(s, sizeof s, "%.2f s", static_cast<double>(ns) / 1e9);
  }
  return s;
}

std::string object_address(std::int64_t detail) {
  char s[32];
  std::snprintf(s, sizeof s, "%p", reinterpret_cast<const void*>(static_cast<std::uintptr_t>(detail)));
  return s;
}

// The tasks in dump order: each root (no live parent, nor a live task that spawned it), the
// longest in its state first, each followed by its tree (a task under the one awaiting it, else
// under the one that spawned it), with the depth of each.
std::vector<std::pair<const task_snapshot*, int>> in_tree_order(const std::vector<task_snapshot>& tasks) {
  std::map<std::uint64_t, const task_snapshot*> by_id;
  for (const auto& t : tasks) by_id[t.id] = &t;
  std::map<std::uint64_t, std::vector<const task_snapshot*>> children;
  std::vector<const task_snapshot*> roots;
  for (const auto& t : tasks) {
    const std::uint64_t up = by_id.count(t.parent) ? t.parent : by_id.count(t.spawned_by) ? t.spawned_by : 0;
    if (up && up != t.id) {
      children[up].push_back(&t);
    } else {
      roots.push_back(&t);
    }
  }
  auto longest_first = [](const task_snapshot* a, const task_snapshot* b) {
    return a->since_ns != b->since_ns ? a->since_ns < b->since_ns : a->id < b->id;
  };
  std::sort(roots.begin(), roots.end(), longest_first);
  for (auto& [id, list] : children) std::sort(list.begin(), list.end(), longest_first);
  std::vector<std::pair<const task_snapshot*, int>> order;
  auto visit = [&](auto& self, const task_snapshot* t, int depth) -> void {
    order.emplace_back(t, depth);
    if (auto it = children.find(t->id); it != children.end()) {
      for (const auto* c : it->second) self(self, c, depth + 1);
    }
  };
  for (const auto* r : roots) visit(visit, r, 0);
  return order;
}

void write_json_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char c : s) {
    switch (c) {
      case '"':
        out << "\\\"";
        break;
      case '\\':
        out << "\\\\";
        break;
      case '\n':
        out << "\\n";
        break;
      case '\r':
        out << "\\r";
        break;
      case '\t':
        out << "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char u[8];
          std::snprintf(u, sizeof u, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out << u;
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

}  // namespace

void set_task_tracking(bool on) noexcept {
  detail::task_tracking_on.store(CORAL_TASK_TRACKING && on, std::memory_order_relaxed);
}
bool task_tracking() noexcept {
  return detail::task_tracking_on.load(std::memory_order_relaxed);
}

std::size_t tracked_task_count() noexcept {
  auto& r = detail::the_registry();
  std::lock_guard lock(r.mutex);
  return r.records.size();
}

void dump_tasks(std::ostream& out, std::size_t limit) {
  if (!CORAL_TASK_TRACKING) {
    out << "coral: task tracking is not compiled in (coral was built with the CMake option CORAL_TASK_TRACKING=OFF)\n";
    return;
  }
  const auto tasks = snapshot_tasks();
  const std::int64_t now = detail::now_ns();
  std::ostringstream s;
  s << "coral: " << tasks.size() << (tasks.size() == 1 ? " task" : " tasks");
  if (tasks.size() > limit) s << ", the first " << limit << " listed";
  if (!task_tracking()) s << " (tracking is off: tasks started now are not listed)";
  s << '\n';
  auto order = in_tree_order(tasks);
  if (order.size() > limit) order.resize(limit);
  for (const auto& [t, depth] : order) {
    const std::string indent(static_cast<std::size_t>(depth) * 2, ' ');
    s << indent << "task " << t->id;
    if (!t->name.empty()) s << " \"" << t->name << '"';
    s << ": " << state_name(t->state) << " for " << seconds(now - t->since_ns);
    if (t->state == detail::task_record::state::suspended) {
      s << ", on " << detail::to_string(t->waits_on);
      if (detail_is_object(t->waits_on)) s << ' ' << object_address(t->wait_detail);
      if (t->waits_on == detail::wait_kind::sleep) s << " (due in " << seconds(t->wait_detail - now) << ')';
    }
    s << '\n';
    s << indent << "    on " << t->executor_text() << "; age " << seconds(now - t->created_ns) << ", " << t->resumes
      << (t->resumes == 1 ? " resume, " : " resumes, ") << seconds(t->busy_ns) << " running\n";
    if (t->parent) {
      s << indent << "    awaited by task " << t->parent << '\n';
    } else {
      s << indent << "    spawned at " << t->spawned_at_text();
      if (t->spawned_by) s << " by task " << t->spawned_by;
      s << '\n';
    }
    const char* label = t->state == detail::task_record::state::suspended ? "waits at" : "last waited at";
    if (!t->recorded_frames().empty()) s << indent << "    " << label << ":\n";
    int n = 0;
    for (const auto& f : t->recorded_frames()) {
      s << indent << "      #" << n++ << ' ' << detail::where(f.file, f.function, f.line) << '\n';
    }
    if (t->depth > detail::task_record::max_frames) {
      s << indent << "      (" << (t->depth - detail::task_record::max_frames) << " outer coroutines not recorded)\n";
    }
  }
  out << s.str();
}

void dump_tasks_json(std::ostream& out, std::size_t limit) {
  std::ostringstream s;
  s << "{\"schema\":1,\"compiled_in\":" << (CORAL_TASK_TRACKING ? "true" : "false")
    << ",\"tracking\":" << (task_tracking() ? "true" : "false");
  const auto tasks = CORAL_TASK_TRACKING ? snapshot_tasks() : std::vector<task_snapshot>{};
  const std::int64_t now = detail::now_ns();
  s << ",\"total\":" << tasks.size() << ",\"tasks\":[";
  auto order = in_tree_order(tasks);
  if (order.size() > limit) order.resize(limit);
  bool first = true;
  for (const auto& [t, depth] : order) {
    static_cast<void>(depth);
    if (!first) s << ',';
    first = false;
    s << "{\"id\":" << t->id << ",\"name\":";
    write_json_string(s, t->name);
    s << ",\"parent\":" << t->parent << ",\"spawned_by\":" << t->spawned_by << ",\"spawned_at\":";
    write_json_string(s, t->spawned_at_text());
    s << ",\"executor\":";
    write_json_string(s, t->executor_text());
    s << ",\"state\":\"" << state_name(t->state) << "\",\"state_for_ns\":" << (now - t->since_ns)
      << ",\"age_ns\":" << (now - t->created_ns) << ",\"resumes\":" << t->resumes << ",\"busy_ns\":" << t->busy_ns;
    s << ",\"waits_on\":\"" << (t->state == detail::task_record::state::suspended ? detail::to_string(t->waits_on) : "")
      << '"';
    if (t->state == detail::task_record::state::suspended && detail_is_object(t->waits_on)) {
      s << ",\"object\":\"" << object_address(t->wait_detail) << '"';
    }
    if (t->state == detail::task_record::state::suspended && t->waits_on == detail::wait_kind::sleep) {
      s << ",\"due_in_ns\":" << (t->wait_detail - now);
    }
    s << ",\"frames\":[";
    const auto frames = t->recorded_frames();
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const auto& f = frames[i];
      if (i) s << ',';
      s << "{\"file\":";
      write_json_string(s, f.file ? f.file : "");
      s << ",\"line\":" << f.line << ",\"function\":";
      write_json_string(s, detail::readable_function(f.function));
      s << '}';
    }
    s << "],\"frames_not_recorded\":"
      << (t->depth > detail::task_record::max_frames ? t->depth - detail::task_record::max_frames : 0) << '}';
  }
  s << "]}\n";
  out << s.str();
}

std::string to_string(const stall_report& report) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f ms", static_cast<double>(report.duration.count()) / 1e6);
  std::string s = "coral: task " + std::to_string(report.task_id);
  if (!report.task_name.empty()) s += " \"" + report.task_name + '"';
  if (report.what == stall_report::kind::ran_too_long) {
    return s + " ran " + ms + " without suspending, blocking " + report.executor + ": from " + report.from + " to " +
           report.to;
  }
  s = s + " waited " + ms + " in the queue of " + report.executor + " to resume from " + report.from;
  if (!report.also_queued.empty()) {
    s += "; queued there too: task";
    if (report.also_queued.size() > 1) s += 's';
    for (std::size_t i = 0; i < report.also_queued.size(); ++i) {
      s += i ? ", " : " ";
      s += std::to_string(report.also_queued[i]);
    }
  }
  return s;
}

std::string to_string(const exception_trace& trace) {
  std::string s;
  for (const auto& step : trace) {
    s += "  task " + std::to_string(step.task_id);
    if (!step.task_name.empty()) s += " \"" + step.task_name + '"';
    if (step.what == exception_step::kind::came_out_of_co_await) {
      s += ": came out of the co_await at " + (step.location.empty() ? std::string("?") : step.location);
    } else if (step.awaited_by) {
      s += ": ended the task, awaited by task " + std::to_string(step.awaited_by);
    } else {
      s += ": ended the task";
      if (!step.location.empty()) s += ", spawned at " + step.location;
    }
    s += '\n';
  }
  return s;
}

const exception_trace& unobserved_exception_trace() noexcept {
  static const exception_trace none;
  const detail::failure_note* note = detail::reported_failure_note;
  return note ? note->trace : none;
}

void set_exception_hook(std::function<void(const std::exception_ptr&, const exception_trace&)> hook) {
  auto& h = detail::the_exception_hook();
  std::shared_ptr<const detail::exception_hook> previous;
  {
    std::lock_guard lock(h.mutex);
    previous = std::exchange(h.hook, hook ? std::make_shared<const detail::exception_hook>(std::move(hook)) : nullptr);
    h.set.store(h.hook != nullptr, std::memory_order_release);
  }
}

void set_stall_detector(std::chrono::nanoseconds threshold, std::function<void(const stall_report&)> report) {
  auto& d = detail::the_detector();
  std::shared_ptr<const std::function<void(const stall_report&)>> previous;
  // (Both under the lock: a report made meanwhile sees the old pair or the new one, never a mix.)
  std::lock_guard lock(d.mutex);
  previous = std::exchange(
      d.report, report ? std::make_shared<const std::function<void(const stall_report&)>>(std::move(report)) : nullptr);
  d.threshold_ns.store(threshold.count() > 0 ? threshold.count() : 0, std::memory_order_relaxed);
}

}  // namespace coral
