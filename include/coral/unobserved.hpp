#pragma once

#include <exception>
#include <functional>

namespace coral {

// What happens to the exception of a task that failed while nobody could observe it: a job
// handle dropped without get_result(), a task_group destroyed without join(). (Exceptions that
// escape a job callback or a completion handler are reported the same way.) The default prints
// the exception's what() to stderr, followed, for a tracked task, by the co_awaits it came out of
// (coral/task_tracking.hpp: a handler reads them with unobserved_exception_trace()).
using unobserved_exception_handler = std::function<void(std::exception_ptr)>;

// Installs `handler` for the whole program and returns the previous one; an empty function
// restores the default. The handler runs on whatever thread lets go of the failed task, with no
// coral lock held, possibly on several threads at once. An exception it throws is printed to
// stderr and dropped.
unobserved_exception_handler set_unobserved_exception_handler(unobserved_exception_handler handler);

}  // namespace coral
