#include <cstdio>
#include <exception>

#include "coral/detail/job_state.hpp"

namespace coral::detail {

namespace {
void report(const char* what_happened, const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "coral: %s: %s\n", what_happened, ex.what());
  } catch (...) {
    std::fprintf(stderr, "coral: %s (not a std::exception)\n", what_happened);
  }
}
}  // namespace

void report_unobserved_exception(const std::exception_ptr& e) noexcept {
  report("a task failed and nobody observed its exception", e);
}

void report_callback_exception(const std::exception_ptr& e) noexcept {
  report("an exception escaped a job callback or completion handler", e);
}

}  // namespace coral::detail
