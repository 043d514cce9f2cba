// Joins and races written with operators, as with Asio's awaitable operators: `a && b` runs both
// and waits for both (coral::when_all), `a || b` runs both and takes the first to end
// (coral::when_any). They are found by argument-dependent lookup: no using-directive needed.
//
// Every race below has a certain winner: the other side waits for something that never comes.
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>
#include <variant>

using namespace std::chrono_literals;

namespace {

// A "backend" that answers after `delay`.
coral::task<std::string> fetch(std::string what, std::chrono::milliseconds delay) {
  co_await coral::sleep_for(delay);
  co_return what;
}

coral::task<std::string> fail_after(std::chrono::milliseconds delay, std::string why) {
  co_await coral::sleep_for(delay);
  throw std::runtime_error(why);
}

coral::task<> warm_up() {
  co_await coral::sleep_for(10ms);
}

coral::task<> joins() {
  // Both run at once; the results come as a tuple, in the order of the operands.
  auto [user, orders] = co_await (fetch("user", 20ms) && fetch("orders", 10ms));
  std::printf("join: %s and %s\n", user.c_str(), orders.c_str());

  // A chain grows one tuple, and a void operand adds nothing to it.
  auto [a, b, c] = co_await (fetch("a", 10ms) && fetch("b", 10ms) && warm_up() && fetch("c", 10ms));
  std::printf("join: %s %s %s, after the warm-up\n", a.c_str(), b.c_str(), c.c_str());

  // The first failure cancels the other operand, waits for it to end, and is rethrown.
  try {
    co_await (fetch("report", std::chrono::hours(1)) && fail_after(10ms, "payments are down"));
  } catch (const std::exception& e) {
    std::printf("join: %s; the report fetch was cancelled\n", e.what());
  }
}

coral::task<> races() {
  // The first operand to end wins; the result is a std::variant by position, the loser is
  // cancelled and awaited before the co_await returns.
  auto answer = co_await (fetch("primary", std::chrono::hours(1)) || fetch("replica", 10ms));
  std::printf("race: %s won (index %zu)\n", std::get<1>(answer).c_str(), answer.index());

  // A duration is an operand too: a time limit. A void result (a sleep) is std::monostate.
  auto limited = co_await (fetch("slow report", std::chrono::hours(1)) || 20ms);
  std::printf("race: %s\n", limited.index() == 1 ? "20ms passed first" : "the report came first");

  // A chain grows one variant.
  auto first = co_await (fetch("a", std::chrono::hours(1)) || fetch("b", std::chrono::hours(1)) || fetch("c", 10ms));
  std::printf("race: %s won (index %zu)\n", std::get<2>(first).c_str(), first.index());

  // Ending with an exception is ending too: a failure that comes first wins, and is rethrown
  // (Asio's `||` would wait for the first success instead).
  try {
    co_await (fetch("backup", std::chrono::hours(1)) || fail_after(10ms, "the primary is down"));
  } catch (const std::exception& e) {
    std::printf("race: %s, and the backup fetch was cancelled\n", e.what());
  }
}

coral::task<> selects() {
  // Channel operations are operands too: a select. A receive that loses has taken nothing.
  coral::channel<std::string> orders(4);
  coral::channel<std::string> control(4);
  control.try_send("stop");
  auto next = co_await (orders.receive() || control.receive());
  std::printf("select: control said %s\n", std::get<1>(next).c_str());

  auto order = co_await (orders.receive() || 20ms);
  std::printf("select: %s\n", order.index() == 1 ? "no order within 20ms" : "an order came");
}

}  // namespace

int main() {
  coral::event_loop loop;
  coral::sync_wait(loop.get_executor(), []() -> coral::task<> {
    co_await joins();
    co_await races();
    co_await selects();
  }());
}
