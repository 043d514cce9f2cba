#pragma once

// What coral keeps of a live task for coral::dump_tasks (coral/task_tracking.hpp): its record,
// written by the task's own thread at each suspension and resumption, read by any thread that
// dumps. Compiled in when CORAL_TASK_TRACKING is 1 (the CMake option of the same name, which
// defines it for coral and its consumers); kept only for tasks started while tracking is on.

#include <atomic>
#include <boost/intrusive/list_hook.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <typeinfo>
#include <version>
#if __has_include(<source_location>)
#include <source_location>
#endif

#include "coral/detail/core/config.hpp"

#ifndef CORAL_TASK_TRACKING
#define CORAL_TASK_TRACKING 1
#endif

namespace coral::detail {

// Tracking changes the layout of coral's types: a program must use one setting everywhere, coral's
// compiled part included. Each translation unit using coral refers to the mark of its own setting,
// which only a library built with the same setting defines: a mismatch is a link error naming the
// cause.
#if CORAL_TASK_TRACKING
extern const int coral_library_built_with_CORAL_TASK_TRACKING;
CORAL_USED inline const int* const task_tracking_mark = &coral_library_built_with_CORAL_TASK_TRACKING;
#else
extern const int coral_library_built_without_CORAL_TASK_TRACKING;
CORAL_USED inline const int* const task_tracking_mark = &coral_library_built_without_CORAL_TASK_TRACKING;
#endif

// A place in the source, as a record keeps it. The strings are literals in the program: a record
// may point at them for as long as the program runs. (No file: not known.)
struct source_place {
  const char* file = nullptr;
  const char* function = nullptr;
  std::uint32_t line = 0;
};

// A place in the source: where a coroutine awaits, or where a task was spawned. Filled in by
// default arguments at the call site. A frame holds one for each co_await that may suspend, so it
// is kept to one pointer where the compiler has std::source_location (the builtins' three fields
// where it has not: clang 14 with libstdc++).
#if CORAL_TASK_TRACKING && defined(__cpp_lib_source_location)
struct code_location {
  std::source_location at;
  static constexpr code_location here(std::source_location at = std::source_location::current()) noexcept {
    return {at};
  }
  source_place place() const noexcept {
    if (at.line() == 0) return {};
    return {at.file_name(), at.function_name(), at.line()};
  }
};
#elif CORAL_TASK_TRACKING
struct code_location {
  source_place at;
  static constexpr code_location here(const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
                                      std::uint32_t line = __builtin_LINE()) noexcept {
    return {{file, function, line}};
  }
  source_place place() const noexcept { return at; }
};
#else
struct code_location {
  static constexpr code_location here() noexcept { return {}; }
  static constexpr source_place place() noexcept { return {}; }
};
#endif

// What a suspended task waits on.
enum class wait_kind : std::uint8_t {
  none,
  child_task,       // a child task (its own record, when it runs as a segment of its own, says more)
  join,             // when_all / when_any / with_timeout / && / || (the branches are child tasks)
  group_join,       // task_group::join()
  sleep,            // a duration, sleep_for, sleep_until (detail: the deadline)
  yield,            // yield(): queued on its executor
  asio_operation,   // an Asio operation awaited with use_task (or a deferred one)
  asio_awaitable,   // an asio::awaitable
  channel_send,     // (detail: the channel's address)
  channel_receive,  // (detail: the channel's address)
  mutex_lock,       // (detail: the mutex's address)
  semaphore_acquire,
  event_wait,
  latch_wait,     // (detail: the latch's address)
  barrier_wait,   // (detail: the barrier's address)
  watch_changed,  // (detail: the watch's address)
  // A shared_mutex's writer, its reader, and a condition_variable's wait (the re-lock of its
  // mutex included); the detail is the primitive's address.
  shared_mutex_lock,
  shared_mutex_lock_shared,
  condition_wait,
  future,           // as_awaiter(std::future)
  awaiter,          // an awaiter<R>
  async_generator,  // the next value of an async_generator
  foreign,          // any other awaitable
};

const char* to_string(wait_kind kind) noexcept;

// Where a task runs, as far as a dump can tell.
enum class executor_kind : std::uint8_t { io_context, thread_pool, other };

// The record of one segment of a task (a spawned task, a child on another executor, a join's
// branch). Written only on the task's own thread (its executor runs one thing at a time) and
// read by dumps on any thread: every field a dump reads is atomic (relaxed: a dump is a
// snapshot, and a field written meanwhile shows its old or its new value). Records are linked
// into the registry, whose lock a dump holds: a record is freed only after it is unlinked.
// (Linked into the registry, newest first, guarded by its lock.)
class task_record : public boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> {
 public:
  enum class state : std::uint8_t { queued, running, suspended };
  // The innermost coroutines of a segment whose await is recorded: deeper ones are counted.
  static constexpr std::uint16_t max_frames = 16;

  struct frame {
    std::atomic<const char*> file{nullptr};
    std::atomic<const char*> function{nullptr};
    std::atomic<std::uint32_t> line{0};
  };

  // (Set before the record is linked, never changed: a dump reads them without atomics.)
  std::uint64_t id = 0;
  std::uint64_t parent = 0;      // the task awaiting this one (a child, a join's branch), or 0
  std::uint64_t spawned_by = 0;  // the task that was running where this one was spawned, or 0
  source_place spawned_at;
  const void* context = nullptr;  // the execution context
  const std::type_info* executor_type = nullptr;
  executor_kind context_kind = executor_kind::other;
  bool strand = false;
  std::int64_t created_ns = 0;

  // Guarded by the registry's lock (set rarely, by this_task::set_name).
  std::string name;

  std::atomic<state> current{state::queued};
  std::atomic<wait_kind> waits_on{wait_kind::none};
  std::atomic<std::int64_t> wait_detail{0};
  std::atomic<std::int64_t> since_ns{0};  // when it entered its current state
  std::atomic<std::uint16_t> depth{0};    // awaiting coroutines recorded in frames (the innermost last)
  std::atomic<std::uint64_t> resumes{0};
  std::atomic<std::int64_t> busy_ns{0};
  frame frames[max_frames];

  // The task's own thread only.
  std::int64_t resumed_at_ns = 0;
  source_place resumed_from;         // the co_await it was last resumed from
  std::uint8_t stalls_reported = 0;  // bit 0: ran too long, bit 1: queued too long
};

// An exception leaving the coroutines of tracked tasks, with the co_awaits it crossed so far
// (coral::exception_trace). Made by the first coroutine it leaves, kept with the task_result it
// went to, handed on by the awaiter that rethrows it to the coroutine it resumes (through this
// thread's rethrown_failure_note) and extended by each coroutine it leaves after that. Defined
// in src/task_tracking.cpp: only pointers to it appear here.
struct failure_note;
void drop_failure_note(failure_note* note) noexcept;
struct failure_note_deleter {
  void operator()(failure_note* note) const noexcept { drop_failure_note(note); }
};
using failure_note_ptr = std::unique_ptr<failure_note, failure_note_deleter>;

// The note of the exception this thread's awaiter is rethrowing, for the coroutine it resumes
// (set by pass_on_failure_note, taken by that coroutine's record_failure when the exception leaves
// it, dropped by forget_caught_failure when it caught the exception instead, and at the latest
// with the thread).
inline constinit thread_local failure_note* rethrown_failure_note = nullptr;
void pass_on_failure_note(failure_note_ptr note) noexcept;
// At a co_await of a tracked task while a note is pending: drops it unless its exception is the
// one being handled right now (a catch block that may still `throw;` it).
void forget_caught_failure() noexcept;
// The note of the exception an unobserved-exception handler is reporting on this thread.
inline constinit thread_local const failure_note* reported_failure_note = nullptr;

// In the unhandled_exception() of a coroutine of a tracked task, at `depth` in its segment: the
// current exception leaves it (and, at depth 0, ends the segment). Returns its note, extended.
failure_note_ptr record_failure(task_record& record, std::uint16_t depth) noexcept;
// Writes `note`'s trace to stderr (an unobserved exception's default report).
void print_failure_trace(const failure_note* note) noexcept;

// The steady clock, in nanoseconds.
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// `co_await this_task::set_name(n)`: names the task in its record.
struct task_name_request {
  std::string name;
};

// Whether tasks started now get a record.
extern std::atomic<bool> task_tracking_on;

// The record of the task running on this thread, if it has one (set around each resumption).
inline constinit thread_local task_record* running_record = nullptr;

// Registry: records are made and linked by make_record(), unlinked and freed by free_record().
task_record* make_record(std::uint64_t parent, std::uint64_t spawned_by, const code_location& where,
                         const void* context, const std::type_info* executor_type, executor_kind kind, bool strand);
void free_record(task_record* record) noexcept;
void rename_record(task_record& record, std::string name);

// On the task's thread. `depth`: the awaiting coroutine's depth in its segment (0: the outermost).
inline void record_await(task_record& record, std::uint16_t depth, const code_location& where, wait_kind kind,
                         std::int64_t detail) noexcept {
#if CORAL_TASK_TRACKING
  if (depth < task_record::max_frames) {
    auto& f = record.frames[depth];
    const source_place at = where.place();
    f.file.store(at.file, std::memory_order_relaxed);
    f.function.store(at.function, std::memory_order_relaxed);
    f.line.store(at.line, std::memory_order_relaxed);
  }
  record.depth.store(static_cast<std::uint16_t>(depth + 1), std::memory_order_relaxed);
  record.waits_on.store(kind, std::memory_order_relaxed);
  record.wait_detail.store(detail, std::memory_order_relaxed);
#else
  static_cast<void>(record), static_cast<void>(depth), static_cast<void>(where), static_cast<void>(kind),
      static_cast<void>(detail);
#endif
}
// The task suspends (or, for a record's last call, ends): its time running counts as busy.
void record_suspend(task_record& record) noexcept;
// A resumption of the task is queued on its executor.
void record_queued(task_record& record) noexcept;
// Runs `resume()` (which resumes the task) as the task's turn: running state, resume count,
// queue wait, and the time it runs, less the time of tasks it resumes on its stack.
template <class Resume>
void record_run(task_record& record, Resume&& resume);

void begin_run(task_record& record) noexcept;
// After a run that began at `began_ns` (the record may be gone: it is not touched).
void end_run(task_record* outer, std::int64_t began_ns) noexcept;

template <class Resume>
void record_run(task_record& record, Resume&& resume) {
  task_record* outer = running_record;
  begin_run(record);
  const std::int64_t began = record.resumed_at_ns;
  struct restore {
    task_record* outer;
    std::int64_t began;
    ~restore() { end_run(outer, began); }
  } guard{outer, began};
  resume();
}

}  // namespace coral::detail
