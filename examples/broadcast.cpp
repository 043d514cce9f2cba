// A broadcast channel: one price feed, and every subscriber gets every quote, in order.
//
// The first feed waits for its slowest subscriber (nothing is lost); the second drops the oldest
// quote when its buffer is full, and a subscriber that fell behind is told how many it missed
// (coral::lagged), then goes on with the oldest quote still buffered. Nothing blocks a thread.
//
// Each subscriber writes down what it saw and the lines are printed at the end, so the output
// never depends on how the tasks interleave.
#include <coral/coral.hpp>
#include <cstdio>
#include <string>
#include <utility>

namespace {

struct quote {
  std::string symbol;
  int cents = 0;
};

coral::task<> publish(coral::broadcast_channel<quote>& feed, int quotes) {
  for (int i = 0; i < quotes; ++i) {
    // (Named, not a braced temporary inside the co_await: g++ 12 copies such a temporary bitwise,
    // which breaks a std::string in it.)
    quote q{"ACME", 1000 + 25 * i};
    co_await feed.send(std::move(q));  // may wait for room
  }
  feed.close();  // subscribers still receive what is buffered for them
}

// Draws every quote (a fast subscriber).
coral::task<std::string> chart(coral::broadcast_subscriber<quote> quotes) {
  std::string seen = "chart:";
  while (auto q = co_await quotes.next()) seen += " " + std::to_string(q->cents);
  co_return seen;
}

// Writes every quote to a slow disk: the publisher waits for it when it is 4 quotes behind.
coral::task<std::string> audit(coral::broadcast_subscriber<quote> quotes) {
  int count = 0;
  long total = 0;
  while (auto q = co_await quotes.next()) {
    co_await coral::yield();  // the write
    ++count;
    total += q->cents;
  }
  co_return "audit: " + std::to_string(count) + " quotes, " + std::to_string(total) + " cents in all";
}

// Looks at the feed only now and then: it wants recent quotes, not all of them.
coral::task<std::string> dashboard(coral::broadcast_subscriber<quote> quotes) {
  std::string seen = "dashboard:";
  for (;;) {
    try {
      auto q = co_await quotes.next();
      if (!q) break;
      seen += " " + std::to_string(q->cents);
    } catch (const coral::lagged& e) {
      seen += " (missed " + std::to_string(e.missed()) + ")";
    }
  }
  co_return seen;
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    coral::broadcast_channel<quote> feed(4);  // a send waits while the slowest is 4 behind
    auto [sent, drawn, audited] =
        co_await coral::when_all(publish(feed, 8), chart(feed.subscribe()), audit(feed.subscribe()));
    std::printf("%s\n%s\n", drawn.c_str(), audited.c_str());

    coral::broadcast_channel<quote> latest(3, coral::overflow::drop_oldest);  // a send never waits
    auto late_viewer = latest.subscribe();
    co_await publish(latest, 8);  // nobody received yet: the first 5 quotes were dropped
    std::printf("%s\n", (co_await dashboard(std::move(late_viewer))).c_str());
  }());
}
