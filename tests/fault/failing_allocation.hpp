#pragma once

namespace coral_test {

// (Implemented with the replaced operator new in allocation_counter.cpp.)
// Makes the k-th allocation (counted from 0) that the calling thread makes from now on throw
// std::bad_alloc (or return null), once; a negative k only counts. Other threads are not counted.
// Counted: the global operator new, and unless `aligned_too` is false, aligned operator new and
// std::aligned_alloc (from which Asio's recycling allocator takes its handlers' memory).
void fail_allocation_at(long k, bool aligned_too = true) noexcept;
// Stops counting on this thread; returns how many allocations were counted.
long stop_failing_allocations() noexcept;
// Whether the allocation chosen by fail_allocation_at was reached (and thrown).
bool allocation_failed() noexcept;

// While one is alive, the calling thread's allocations are neither counted nor made to fail (what a
// scenario makes that is not under test).
class uncounted_allocations {
 public:
  uncounted_allocations() noexcept;
  ~uncounted_allocations();
  uncounted_allocations(const uncounted_allocations&) = delete;
  uncounted_allocations& operator=(const uncounted_allocations&) = delete;

 private:
  bool was_counting_;
};

}  // namespace coral_test
