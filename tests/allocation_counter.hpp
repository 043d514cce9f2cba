#pragma once

namespace coral_test {

// Counts the allocations (global operator new) the constructing thread makes while it is alive, to
// prove that a call leaves nothing behind. The rest of the program is not counted.
class allocation_counter {
 public:
  allocation_counter() noexcept;
  ~allocation_counter();
  allocation_counter(const allocation_counter&) = delete;
  allocation_counter& operator=(const allocation_counter&) = delete;
  long count() const noexcept;
};

}  // namespace coral_test
