#pragma once

#include <atomic>
#include <chrono>
#include <coral/coral.hpp>
#include <future>
#include <thread>

namespace coral_test {

using namespace std::chrono_literals;

// Counts live instances, to prove frames and values are freed (or not copied).
struct lifetime {
  static inline std::atomic<int> alive{0};
  lifetime() { ++alive; }
  lifetime(const lifetime&) { ++alive; }
  lifetime(lifetime&&) noexcept { ++alive; }
  lifetime& operator=(const lifetime&) = default;
  lifetime& operator=(lifetime&&) noexcept = default;
  ~lifetime() { --alive; }
};

// The bound on every wait in the tests: long enough for a loaded sanitizer build, short enough
// that a hang fails instead of stalling CI.
inline constexpr auto patience = 30s;

template <class T>
T get_within(coral::job<T> j) {
  if (!j.wait_for(patience)) throw std::runtime_error("test: job did not finish in time");
  return j.get_result();
}

// The error a job failed with (an empty code if it succeeded), waiting at most `patience`.
template <class T>
boost::system::error_code failure_of(coral::job<T> j) {
  try {
    get_within(j);
  } catch (const boost::system::system_error& e) {
    return e.code();
  }
  return {};
}

// The thread a executor runs its work on (for a single-threaded executor).
template <class Executor>
std::thread::id thread_of(const Executor& ex) {
  std::promise<std::thread::id> p;
  auto f = p.get_future();
  boost::asio::post(ex, [&] { p.set_value(std::this_thread::get_id()); });
  if (f.wait_for(patience) != std::future_status::ready) throw std::runtime_error("test: executor does not run");
  return f.get();
}

}  // namespace coral_test
