// Deadlines, fan-out and races with coral: a request under a deadline, a fan-out with when_all, a
// race with when_any, a select loop over two channels, a ticker, and a task group whose first
// failure cancels the rest. Timings
// leave wide margins, so the output is the same on a loaded machine.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

// A "backend" that answers after `delay`.
coral::task<std::string> fetch(std::string what, std::chrono::milliseconds delay) {
  co_await coral::sleep_for(delay);
  co_return what;
}

coral::task<> request_with_deadline() {
  auto fast = co_await coral::with_timeout(1s, fetch("profile", 10ms));
  std::printf("deadline: got %s in time\n", fast.c_str());
  try {
    co_await coral::with_timeout(50ms, fetch("report", std::chrono::hours(1)));
  } catch (const coral::timeout_error& e) {
    std::printf("deadline: %s\n", e.what());
  }
}

coral::task<> fan_out() {
  auto [a, b, c] = co_await coral::when_all(fetch("a", 30ms), fetch("b", 10ms), fetch("c", 20ms));
  std::printf("fan-out: %s %s %s (in argument order, whatever finished first)\n", a.c_str(), b.c_str(), c.c_str());
  std::vector<coral::task<std::string>> shards;
  for (int i = 0; i < 5; ++i)
    shards.push_back(fetch("shard" + std::to_string(i), std::chrono::milliseconds(5 * (5 - i))));
  auto results = co_await coral::when_all(std::move(shards));
  std::printf("fan-out: %zu shards, first %s, last %s\n", results.size(), results.front().c_str(),
              results.back().c_str());
}

coral::task<> race() {
  auto winner = co_await coral::when_any(fetch("primary", std::chrono::hours(1)), fetch("replica", 10ms));
  std::printf("race: %s answered first (branch %zu); the other was cancelled and awaited\n",
              std::get<1>(winner).c_str(), winner.index());
  auto timed = co_await coral::when_any(fetch("slow", std::chrono::hours(1)), 20ms);
  std::printf("race: %s\n", timed.index() == 1 ? "the 20ms sleep won" : "the fetch won");
}

// Orders and a stop signal arrive on two channels; the loop takes whichever comes first and
// notices when nothing came for a while. A select is lossless: a receive that lost the race
// consumed nothing, so no order is ever dropped between iterations.
coral::task<> select_loop() {
  coral::channel<std::string> orders;
  coral::channel<std::string> control;
  auto feed = [](coral::channel<std::string>& orders, coral::channel<std::string>& control) -> coral::task<> {
    for (int i = 1; i <= 3; ++i) {
      co_await coral::sleep_for(5ms);
      co_await orders.send("order " + std::to_string(i));
    }
    co_await coral::sleep_for(60ms);  // longer than the loop's idle limit
    co_await control.send("stop");
  };
  coral::task_group g(co_await coral::this_task::executor);
  g.spawn(feed(orders, control));
  int taken = 0;
  for (bool running = true; running;) {
    auto next = co_await coral::when_any(orders.receive(), control.receive(), 40ms);
    switch (next.index()) {
      case 0:
        ++taken;
        std::printf("select: %s\n", std::get<0>(next).c_str());
        break;
      case 1:
        std::printf("select: %s after %d orders\n", std::get<1>(next).c_str(), taken);
        running = false;
        break;
      default:
        std::printf("select: idle for 40ms\n");
    }
  }
  co_await g.join();
  // A receive under a deadline: it either receives or throws, having taken nothing.
  try {
    co_await coral::with_timeout(10ms, orders.receive());
  } catch (const coral::timeout_error&) {
    std::printf("select: no order within 10ms\n");
  }
}

coral::task<> ticker() {
  for (int i = 1; i <= 3; ++i) {
    co_await coral::sleep_for(10ms);
    std::printf("ticker: tick %d\n", i);
  }
}

coral::task<> group_with_a_failure() {
  coral::task_group g(co_await coral::this_task::executor);
  g.spawn(fetch("never", std::chrono::hours(1)));
  g.spawn([]() -> coral::task<> {
    co_await coral::sleep_for(10ms);
    throw std::runtime_error("worker 2 failed");
  });
  try {
    co_await g.join();
  } catch (const std::exception& e) {
    std::printf("group: %s; the other worker was cancelled (%zu left)\n", e.what(), g.size());
  }
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    co_await request_with_deadline();
    co_await fan_out();
    co_await race();
    co_await select_loop();
    co_await ticker();
    co_await group_with_a_failure();
  }());
}
