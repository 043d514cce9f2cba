#pragma once

// What every live task is doing, while the program runs:
//
//   coral::set_task_tracking(true);          // or CORAL_TASK_TRACKING=1 in the environment
//   ...
//   coral::dump_tasks(std::cerr);            // text: one block per root task, its tree indented
//   coral::dump_tasks_json(out);             // the same as JSON (schema in docs/observability.md)
//   coral::dump_tasks(out, 100);             // at most 100 of them; the total is said all the same
//   co_await coral::this_task::set_name("session 10.0.0.7:5123");
//   coral::set_stall_detector(10ms);         // reports a task that runs 10 ms without suspending
//   coral::set_exception_hook(f);            // f(e, trace) each time an exception leaves a coroutine
//
// An exception that leaves the coroutines of tracked tasks keeps its way through them: each
// co_await it came out of and each task it ended. The unobserved-exception report prints it
// (coral/unobserved.hpp), and a handler reads it with unobserved_exception_trace().
//
// A task started while tracking is on is listed until it ends: its id, name, where it was
// spawned, its executor, its state (queued, running, suspended) and for how long, its resumes and
// time running, and, for a suspended task, what it waits on and where: the co_await of each of
// its coroutines, innermost first (its async stack), followed by those of the task awaiting it.
// The source locations come from coral's co_await and spawn themselves: users write nothing.
//
// Tracking is compiled in unless coral is built with the CMake option CORAL_TASK_TRACKING=OFF
// (then these functions only say that it is not compiled in), and switched off until switched
// on. Compiled in and switched off, a co_await costs a pointer test, and a frame holds a pointer
// to the source location of the co_await it is suspended in; switched on, a clock reading per
// resumption and suspension and a lock per task started and ended (docs/benchmarks.md has the
// figures).
//
// Thread safety: every function may be called from any thread, also from inside a task, while
// tasks run on every executor; a dump never stops an executor and never waits for a task.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "coral/detail/tracking/task_record.hpp"

namespace coral {

// Switches tracking on or off for the tasks started from now on (those running keep their
// state). Initially on when the environment variable CORAL_TASK_TRACKING is 1.
void set_task_tracking(bool on) noexcept;
bool task_tracking() noexcept;

// Writes the live tracked tasks: text, or one JSON object. At most `limit` of them are listed, the
// first ones in the dump's order (the roots longest in their state first, each followed by its
// tree); how many are alive is always said (the text's first line, the JSON's "total"). Only the
// listed tasks are formatted: a dump's size and cost are bounded by `limit`, apart from copying
// each live task's record (a few hundred bytes each).
inline constexpr std::size_t all_tasks = std::numeric_limits<std::size_t>::max();
void dump_tasks(std::ostream& out, std::size_t limit = all_tasks);
void dump_tasks_json(std::ostream& out, std::size_t limit = all_tasks);

// How many tracked tasks are alive.
std::size_t tracked_task_count() noexcept;

// A task that kept its executor's thread too long, or waited too long in its executor's queue.
struct stall_report {
  enum class kind { ran_too_long, queued_too_long };
  kind what;
  std::uint64_t task_id;
  std::string task_name;
  std::chrono::nanoseconds duration;
  std::string executor;  // e.g. "io_context 0x55d0c8a0 (strand)"
  // ran_too_long: the co_await it resumed from and the one where it suspended again (or "its
  // end"); queued_too_long: the co_await it was resumed from.
  std::string from;
  std::string to;
  // queued_too_long: the other tracked tasks queued on the same execution context at that moment.
  std::vector<std::uint64_t> also_queued;
};
// The default report: one line on stderr.
std::string to_string(const stall_report& report);

// Reports each tracked task, once, that runs longer than `threshold` between two suspension
// points (it blocks its executor), and each task, once, whose resumption after a suspension waited
// longer than `threshold` in its executor's queue (something else blocks it). `report` runs on the task's thread, in no
// lock of coral's; by default it writes to_string(report) to stderr. A threshold of zero switches the detector off (the
// default).
void set_stall_detector(std::chrono::nanoseconds threshold, std::function<void(const stall_report&)> report = {});

// One step of an exception's way out of tracked tasks: it came out of a co_await in task
// `task_id` (`location`), or it ended task `task_id` (`location`: where that task was spawned)
// and went on to the task awaiting it (`awaited_by`, or 0).
struct exception_step {
  enum class kind { came_out_of_co_await, ended_task };
  kind what = kind::came_out_of_co_await;
  std::uint64_t task_id = 0;
  std::string task_name;
  std::string location;  // "file:line in function", or empty when not recorded
  std::uint64_t awaited_by = 0;
};
// The steps so far, from where it was thrown (the first) outwards.
using exception_trace = std::vector<exception_step>;
// One indented line per step.
std::string to_string(const exception_trace& trace);

// Inside an unobserved-exception handler: the trace of the exception it reports (empty when the
// task that failed was not tracked, or outside a handler).
const exception_trace& unobserved_exception_trace() noexcept;

// Calls `hook(e, trace)` each time an exception leaves a coroutine of a tracked task, on the
// task's thread, before the co_await awaiting that coroutine rethrows it. The hook must not
// suspend or block; an exception it throws is printed to stderr and dropped. An empty function
// removes the hook (the default).
void set_exception_hook(std::function<void(const std::exception_ptr&, const exception_trace&)> hook);

}  // namespace coral
