// A readers-writer lock: request handlers read a routing table together, while a reload takes it
// exclusively. A reload that waits for the readers holds back the readers that come after it, so
// a steady stream of requests cannot keep it waiting for ever. Nothing blocks a thread.
//
// Everything runs on one event loop thread, and the lock is handed out first come, first served,
// so the order of the lines below never depends on timing.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>

using namespace std::chrono_literals;

namespace {

struct routing_table {
  coral::shared_mutex lock;
  int version = 1;
};

coral::task<> handle(routing_table& routes, const char* request, std::chrono::milliseconds arrives,
                     std::chrono::milliseconds takes) {
  co_await coral::sleep_for(arrives);
  std::printf("%s: arrives\n", request);
  co_await routes.lock.lock_shared();  // waits only for a writer, or behind a waiting one
  std::printf("%s: reading version %d\n", request, routes.version);
  co_await coral::sleep_for(takes);  // other readers may read meanwhile
  std::printf("%s: done\n", request);
  routes.lock.unlock_shared();
}

coral::task<> reload(routing_table& routes, std::chrono::milliseconds arrives) {
  co_await coral::sleep_for(arrives);
  std::printf("reload: waiting for the readers\n");
  auto writing = co_await routes.lock.scoped_lock();  // unlocks when it goes
  std::printf("reload: writing version %d (try_lock_shared: %s)\n", routes.version + 1,
              routes.lock.try_lock_shared() ? "true" : "false");
  co_await coral::sleep_for(10ms);
  ++routes.version;
  std::printf("reload: done\n");
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    routing_table routes;
    co_await coral::when_all(handle(routes, "GET /a", 0ms, 40ms), handle(routes, "GET /b", 10ms, 40ms),
                             reload(routes, 20ms), handle(routes, "GET /c", 30ms, 10ms));
    std::printf("version %d (try_lock: %s)\n", routes.version, routes.lock.try_lock() ? "true" : "false");
    routes.lock.unlock();
  }());
}
