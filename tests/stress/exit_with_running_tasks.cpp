// Returns from main() while fire-and-forget tasks (their jobs dropped) are still running and
// bouncing between loop_executor, pool_executor and new_thread_executor: sleeping, yielding,
// awaiting bound children on the pool, hopping with on(), sending and receiving on channels.
// Process exit must be clean every time: no crash, no hang, no ASan/LSan/TSan report.
//
// Usage: exit_with_running_tasks [seed]
#include <atomic>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <random>

using namespace std::chrono_literals;

namespace {

std::atomic<int> iterations{0};
constexpr int iterations_before_exit = 400;
std::promise<void> busy;  // set once the tasks have done enough work together
std::atomic<bool> told{false};

void count_iteration() {
  if (++iterations == iterations_before_exit && !told.exchange(true)) busy.set_value();
}

coral::task<int, coral::pool_executor> bound_child(int n) {
  co_await coral::yield();
  co_await std::chrono::microseconds(50 * n);
  co_return n;
}

coral::task<int> inherit_child(int n) {
  co_await 100us;
  co_return n;
}

// Half the wanderers only send on the channel and half only receive, so that they cannot all end
// up waiting on the same side of a rendezvous channel (a deadlock of the test, not of coral).
template <class Executor>
coral::task<void, Executor> wanderer(unsigned seed, bool sender, std::shared_ptr<coral::channel<int>> ch) {
  std::mt19937 rng(seed);
  for (;;) {
    switch (rng() % 7) {
      case 0:
        co_await std::chrono::microseconds(rng() % 2000);
        break;
      case 1:
        co_await coral::yield();
        break;
      case 2:
        co_await bound_child(static_cast<int>(rng() % 4));
        break;
      case 3:
        co_await coral::on(coral::pool_executor{}, inherit_child(1));
        break;
      case 4:
        co_await coral::on(coral::loop_executor{}, inherit_child(2));
        break;
      case 5:
      case 6:
        if (sender) {
          co_await ch->send(static_cast<int>(rng() % 100));
        } else {
          co_await ch->receive();
        }
        break;
    }
    count_iteration();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned seed = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1u;
  std::mt19937 rng(seed);
  auto ch = std::make_shared<coral::channel<int>>(rng() % 3);
  for (int i = 0; i < 24; ++i) {
    switch (rng() % 3) {
      case 0:
        coral::spawn(wanderer<coral::loop_executor>(rng(), i % 2 == 0, ch));
        break;
      case 1:
        coral::spawn(wanderer<coral::pool_executor>(rng(), i % 2 == 0, ch));
        break;
      case 2:
        coral::spawn(wanderer<coral::new_thread_executor>(rng(), i % 2 == 0, ch));
        break;
    }
  }
  ch.reset();  // only the tasks hold the channel now
  if (busy.get_future().wait_for(30s) != std::future_status::ready) {
    std::fputs("exit_with_running_tasks: the tasks made no progress\n", stderr);
    return 1;
  }
  std::printf("seed %u: returning from main with the tasks still running\n", seed);
  return 0;  // the tasks are still running: the default contexts must shut them down cleanly
}
