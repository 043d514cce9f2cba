// A barrier: three workers simulate a system in rounds. Each computes its part of a round, then
// waits at the barrier for the others; the completion step publishes the round once every worker
// has arrived, before any of them starts the next one. After two rounds one worker leaves
// (arrive_and_drop) and the other two go on. Nothing blocks a thread.
//
// Everything runs on one event loop thread, and waiters are woken first come, first served, so the
// order of the lines below never depends on timing.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>

using namespace std::chrono_literals;

namespace {

// Runs once per round, in the call of the last arrival, before any worker goes on.
struct publish_round {
  int* round;
  void operator()() const noexcept { std::printf("-- round %d published\n", ++*round); }
};

// `leaves_in`: the round after which the worker leaves (0: it stays for all three).
coral::task<> worker(coral::barrier<publish_round>& rounds, const char* name, int leaves_in,
                     std::chrono::milliseconds takes) {
  for (int r = 1; r <= 3; ++r) {
    co_await coral::sleep_for(takes);  // computing its part of round r
    if (r == leaves_in) {
      std::printf("%s: part %d done, leaving\n", name, r);
      rounds.arrive_and_drop();  // counts in this round, and in none after it
      co_return;
    }
    std::printf("%s: part %d done\n", name, r);
    co_await rounds.arrive_and_wait();
  }
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    int round = 0;
    coral::barrier rounds(3, publish_round{&round});
    co_await coral::when_all(worker(rounds, "fluid", 0, 10ms), worker(rounds, "heat", 0, 20ms),
                             worker(rounds, "stress", 2, 30ms));
    std::printf("done after %d rounds\n", round);
  }());
}
