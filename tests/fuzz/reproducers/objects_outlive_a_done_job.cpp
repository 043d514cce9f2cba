// Found by stress_channel_program on pool_executor (and, rarer, inline_executor): a job reports
// done (job.wait() returns) while objects its task's select or with_timeout held are still alive;
// a pool thread destroys them a little later. The contract says a done job has nothing of its
// task left running, so that the caller may destroy what the task used right away.
//
// Not part of the test suite (it fails until that is fixed). Build and run:
//   g++ -std=c++20 -O1 -Iinclude tests/fuzz/reproducers/objects_outlive_a_done_job.cpp src/*.cpp -pthread -o repro &&
//   ./repro
// It prints, per case, in how many of 3000 rounds objects were still alive after job.wait()
// returned (0 expected), and exits with 1 if any were.

#include <atomic>
#include <coral/coral.hpp>
#include <cstdio>
#include <thread>

namespace {

std::atomic<long> alive{0};

struct payload {
  payload() { ++alive; }
  payload(payload&&) noexcept { ++alive; }
  payload& operator=(payload&&) noexcept = default;
  ~payload() { --alive; }
};

using channel = coral::channel<payload>;

template <class Select>
int rounds_with_objects_alive_after_wait(Select select, bool cancel) {
  int late = 0;
  for (int round = 0; round < 3000; ++round) {
    channel a(0), b(0);
    auto j = coral::spawn(coral::pool_executor{}, [&]() -> coral::task<> {
      try {
        co_await select(a, b);
      } catch (const std::exception&) {
        // closed, cancelled or timed out: all expected here
      }
    });
    if (cancel) j.cancel();
    a.try_send(payload());
    a.close();
    b.close();
    j.wait();
    if (alive != 0) {
      ++late;
      while (alive != 0) std::this_thread::yield();  // they do go, on a pool thread
    }
  }
  return late;
}

}  // namespace

int main() {
  using namespace std::chrono_literals;
  const int timed = rounds_with_objects_alive_after_wait(
      [](channel& a, channel&) -> coral::task<> { co_await coral::with_timeout(50us, a.receive()); }, false);
  const int raced = rounds_with_objects_alive_after_wait(
      [](channel& a, channel& b) -> coral::task<> { co_await coral::when_any(a.receive(), b.send(payload())); }, true);
  std::printf("with_timeout(50us, a.receive()):             %d of 3000 rounds\n", timed);
  std::printf("when_any(a.receive(), b.send(v)), cancelled: %d of 3000 rounds\n", raced);
  return timed + raced != 0;
}
