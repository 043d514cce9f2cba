#pragma once

namespace coral_test {

// (Implemented with the replaced operator new in allocation_counter.cpp.)
// Makes the k-th allocation (global operator new, counted from 0) that the calling thread makes
// from now on throw std::bad_alloc, once; a negative k only counts. Other threads are not counted.
void fail_allocation_at(long k) noexcept;
// Stops counting on this thread; returns how many allocations were counted.
long stop_failing_allocations() noexcept;
// Whether the allocation chosen by fail_allocation_at was reached (and thrown).
bool allocation_failed() noexcept;
// Whether this thread's aligned allocations (aligned operator new, std::aligned_alloc, which
// Asio's recycling allocator uses for its handlers' memory) are counted and made to fail as
// well. Off by default: failing them along a spawn onto a strand fails Asio's strand after it
// has queued the task's start (see the wake tests, which turn it on).
void count_aligned_allocations(bool on) noexcept;

}  // namespace coral_test
