#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "coral/detail/core/result_segment.hpp"
#include "coral/detail/tracking/task_record.hpp"
#include "coral/unobserved.hpp"

namespace coral {

namespace {

struct handler_slot {
  std::mutex mutex;
  // Shared so that a report in flight keeps the handler it started with while another is installed.
  std::shared_ptr<const unobserved_exception_handler> handler;
};

// Never destroyed: tasks may fail during static destruction (the default executors shut down).
handler_slot& slot() {
  static handler_slot* const s = new handler_slot;
  return *s;
}

void print(const char* what_happened, const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "coral: %s: %s\n", what_happened, ex.what());
  } catch (...) {
    std::fprintf(stderr, "coral: %s (not a std::exception)\n", what_happened);
  }
}

// `note`: the exception's way through tracked tasks, if it has one.
void report(const char* what_happened, const std::exception_ptr& e, const detail::failure_note* note) noexcept {
  std::shared_ptr<const unobserved_exception_handler> handler;
  {
    std::lock_guard lock(slot().mutex);
    handler = slot().handler;
  }
  if (!handler) {
    print(what_happened, e);
    return detail::print_failure_trace(note);
  }
  const detail::failure_note* outer = std::exchange(detail::reported_failure_note, note);
  try {
    (*handler)(e);
  } catch (...) {
    print("the unobserved-exception handler threw", std::current_exception());
  }
  detail::reported_failure_note = outer;
}

}  // namespace

unobserved_exception_handler set_unobserved_exception_handler(unobserved_exception_handler handler) {
  auto next = handler ? std::make_shared<const unobserved_exception_handler>(std::move(handler)) : nullptr;
  std::shared_ptr<const unobserved_exception_handler> previous;
  {
    std::lock_guard lock(slot().mutex);
    previous = std::exchange(slot().handler, std::move(next));
  }
  return previous ? *previous : unobserved_exception_handler();
}

namespace detail {

void report_unobserved_exception(const std::exception_ptr& e, const failure_note* note) noexcept {
  report("a task failed and nobody observed its exception", e, note);
}

void report_callback_exception(const std::exception_ptr& e) noexcept {
  report("an exception escaped a job callback or completion handler", e, nullptr);
}

}  // namespace detail

}  // namespace coral
