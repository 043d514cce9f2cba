// Tasks waiting for each other without blocking a thread: a semaphore that limits how many
// queries use the database at once, an async_mutex that guards a cache across a slow load, and
// an event that holds workers at a start gate until the configuration is loaded.
//
// Everything runs on one event loop thread, and each waiter is woken first come, first served, so
// the order of the lines below never depends on timing.
#include <algorithm>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

// ---- semaphore: at most two connections to the database at once ----

struct database {
  coral::semaphore connections{2};  // one permit per connection
  int open = 0;                     // connections in use now
  int most_open = 0;                // the most that were ever in use at once
};

coral::task<> run_query(database& db, int client) {
  if (db.connections.available() == 0) std::printf("limit: client %d waits for a connection\n", client);
  // The permit is given back when `permit` goes out of scope, also if the query throws.
  auto permit = co_await db.connections.scoped_acquire();
  db.most_open = std::max(db.most_open, ++db.open);
  std::printf("limit: client %d connected\n", client);
  co_await coral::sleep_for(20ms);  // the query itself
  --db.open;
}

coral::task<> connection_limit() {
  database db;
  std::vector<coral::task<>> clients;
  for (int client = 1; client <= 5; ++client) clients.push_back(run_query(db, client));
  // The clients start one after the other; the first two get a connection at once, the others
  // queue and are served in the order they asked.
  co_await coral::when_all(std::move(clients));
  std::printf("limit: 5 queries done, at most %d connections open at once, %zu free again\n", db.most_open,
              db.connections.available());
}

// ---- async_mutex: a cache in front of a slow backend ----

struct cache {
  coral::async_mutex mutex;
  std::map<std::string, std::string> entries;  // guarded by mutex
  int backend_loads = 0;                       // guarded by mutex
};

coral::task<std::string> load_from_backend(std::string key) {
  co_await coral::sleep_for(30ms);  // a slow call
  co_return "profile of " + key;
}

// The lock is held across the load (a std::mutex must never be held across a co_await): readers
// who ask for the key while it loads wait for the lock, then find the entry, so the backend is
// asked only once. One mutex for the whole cache keeps the example short; a busy cache would lock
// per key.
coral::task<std::string> lookup(cache& c, std::string key) {
  auto guard = co_await c.mutex.scoped_lock();
  if (auto it = c.entries.find(key); it != c.entries.end()) co_return it->second;
  ++c.backend_loads;
  auto value = co_await load_from_backend(key);
  c.entries.emplace(key, value);
  co_return value;
}  // unlocked here: the next reader in line gets the lock

coral::task<> reader(cache& c, int id) {
  auto profile = co_await lookup(c, "user:42");
  std::printf("cache: reader %d got \"%s\"\n", id, profile.c_str());
}

coral::task<> shared_cache() {
  cache c;
  co_await coral::when_all(reader(c, 1), reader(c, 2), reader(c, 3));
  std::printf("cache: the backend was asked %d time for 3 readers\n", c.backend_loads);
}

// ---- event: a start gate ----

coral::task<> worker(coral::event& gate, int id) {
  std::printf("gate: worker %d ready\n", id);
  co_await gate.wait();  // returns at once if the gate is already open
  std::printf("gate: worker %d started\n", id);
}

coral::task<> open_gate(coral::event& gate) {
  co_await coral::sleep_for(20ms);  // loading the configuration
  std::printf("gate: configuration loaded, opening the gate\n");
  gate.set();  // wakes every waiting worker, in the order they began to wait; stays set
}

coral::task<> start_gate() {
  coral::event gate;
  co_await coral::when_all(worker(gate, 1), worker(gate, 2), worker(gate, 3), open_gate(gate));
  // The event stays set: a worker that comes later goes straight through.
  co_await worker(gate, 4);
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    co_await connection_limit();
    co_await shared_cache();
    co_await start_gate();
  }());
}
