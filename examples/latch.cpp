// A latch: a server waits, before it accepts anything, until its three caches have warmed up
// (each counts down once), and each cache refresher waits for all three too before it starts its
// periodic work (arrive_and_wait). Nothing blocks a thread.
//
// Everything runs on one event loop thread, and waiters are woken first come, first served, so the
// order of the lines below never depends on timing.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>

using namespace std::chrono_literals;

namespace {

coral::task<> warm_up(coral::latch& warmed, const char* cache, std::chrono::milliseconds takes) {
  co_await coral::sleep_for(takes);  // loading the cache
  std::printf("%s: warm\n", cache);
  co_await warmed.arrive_and_wait();  // counts down now, then waits for the other two
  std::printf("%s: refreshing from now on\n", cache);
}

coral::task<> serve(coral::latch& warmed) {
  std::printf("server: waiting for the caches\n");
  co_await warmed.wait();
  std::printf("server: accepting connections (try_wait: %s)\n", warmed.try_wait() ? "true" : "false");
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    coral::latch warmed(3);
    co_await coral::when_all(serve(warmed), warm_up(warmed, "users", 30ms), warm_up(warmed, "products", 10ms),
                             warm_up(warmed, "prices", 20ms));
    // A latch does not reset: a wait now completes at once.
    co_await warmed.wait();
    std::printf("done\n");
  }());
}
