// With CORAL_CORO_LIFETIME_CHECKS (clang 19 and later), a correct program compiles with no
// warning, -Wdangling an error: coral's own functions that return a task or a generator without
// being coroutines are wrappers clang accepts, and passing temporaries to them, or to coroutines
// that take their parameters by value, or awaiting a coroutine at once, is not reported. The test
// is that this compiles under -Werror; running it checks the results.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdio>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

coral::task<std::size_t> length_of(const std::string& text) {
  co_await coral::yield();
  co_return text.size();
}

coral::task<std::size_t> length_of_copy(std::string text) {
  co_await coral::yield();
  co_return text.size();
}

coral::generator<int> up_to(int n) {
  for (int i = 1; i <= n; ++i) co_yield i;
}

coral::async_generator<int> ticks(int n) {
  for (int i = 0; i < n; ++i) {
    co_await coral::yield();
    co_yield i;
  }
}

coral::task<int> twice(int x) {
  co_return 2 * x;
}

struct node {
  std::vector<int> children;
  coral::generator<int> each_child() const {
    for (int c : children) co_yield c;
  }
};

coral::generator<node> nodes() {
  node first{{1, 2}}, second{{3}};  // (named: g++ 12 rejects a braced temporary in a co_yield)
  co_yield std::move(first);
  co_yield std::move(second);
}

boost::asio::awaitable<int> asio_answer() {
  co_return 42;
}

// A user's own function that returns a task without being a coroutine: marked as clang asks.
CORAL_CORO_WRAPPER coral::task<std::size_t> length_of_literal() {
  return length_of_copy("wrapped");
}

coral::task<int> run_all() {
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) {
      std::printf("failed: %s\n", what);
      ++failures;
    }
  };

  // A temporary bound to a reference parameter, awaited within the full-expression: fine.
  check(co_await length_of(std::string("temporary")) == 9, "await with a temporary");
  // A reference to a local that outlives the task.
  std::string local = "local";
  auto kept = length_of(local);
  check(co_await std::move(kept) == 5, "task kept with a local");
  // A temporary moved into a by-value parameter.
  auto copied = length_of_copy(std::string("copied"));
  check(co_await std::move(copied) == 6, "task kept with a copied temporary");
  check(co_await length_of_literal() == 7, "the user's wrapper");

  // coral's wrappers take their operands over (temporaries included).
  auto both = coral::when_all(length_of_copy("ab"), length_of(local));
  auto [a, b] = co_await std::move(both);
  check(a == 2 && b == 5, "when_all");
  auto timed = coral::with_timeout(1s, length_of_copy("abc"));
  check(co_await std::move(timed) == 3, "with_timeout");
  auto until = coral::with_deadline(std::chrono::steady_clock::now() + 1s, length_of(local));
  check(co_await std::move(until) == 5, "with_deadline");
  auto any = coral::when_any(length_of_copy("abcd"), coral::sleep_for(1s));
  check((co_await std::move(any)).index() == 0, "when_any");
  auto either = length_of_copy("x") || coral::sleep_for(1s);
  check((co_await std::move(either)).index() == 0, "operator||");
  auto [answer, length] = co_await (asio_answer() && length_of_copy("xy"));
  check(answer == 42 && length == 2, "operator&& with an asio::awaitable");
  boost::asio::steady_timer soon(co_await coral::this_task::executor, 1ms), late(soon.get_executor(), 1h);
  auto first = co_await (soon.async_wait(coral::use_task) || late.async_wait(coral::use_task));
  check(first.index() == 0, "operator|| of Asio operations");

  coral::channel<std::string> ch(1);
  co_await ch.send(std::string("sent"));
  auto received = coral::with_timeout(1s, ch.receive());
  check(co_await std::move(received) == "sent", "with_timeout of a receive");

  // Generators and their transforms, from temporaries.
  auto squares = up_to(4).map([](int x) { return x * x; }).filter([](int x) { return x > 1; }).take(2);
  std::vector<int> seen;
  for (int x : squares) seen.push_back(x);
  check(seen == std::vector<int>{4, 9}, "generator transforms");
  auto nested = up_to(3).flat_map(up_to).take_while([](int x) { return x < 3; });
  int count = 0;
  for (int x : nested) count += x;
  check(count == 7, "generator flat_map and take_while");  // 1, 1 2, 1 2 (3)
  int children = 0;
  for (int c : nodes().flat_map(&node::each_child)) children += c;
  check(children == 6, "generator flat_map of a member function");
  std::vector<coral::task<int>> doubling;
  for (auto&& t : up_to(3).map(twice)) doubling.push_back(std::move(t));
  auto doubled_all = co_await coral::when_all(std::move(doubling));
  check(doubled_all == std::vector<int>{2, 4, 6}, "generator map to tasks");
  auto async_tasks = ticks(2).map(twice);
  int async_sum = 0;
  while (auto t = co_await async_tasks.next()) async_sum += co_await std::move(*t);
  check(async_sum == 2, "async_generator map to tasks");
  auto produced = coral::produce<int>(co_await coral::this_task::executor, 1,
                                      [](coral::channel<int>& out) -> coral::task<> { co_await out.send(5); });
  int got = 0;
  while (auto v = co_await produced.next()) got += *v;
  check(got == 5, "produce");
  std::vector<int> range{4, 5};
  int from_kept = 0;
  for (int x : coral::generator<int>::from(range)) from_kept += x;
  check(from_kept == 9, "generator::from an lvalue range");
  auto listed = coral::generator<int>::from({1, 2, 3});
  int sum = 0;
  for (int x : listed) sum += x;
  check(sum == 6, "generator::from an initializer list");
  auto doubled = ticks(5).filter([](int x) { return x % 2 == 0; }).map([](int x) { return x; }).take(3);
  int last = -1;
  while (auto x = co_await doubled.next()) last = *x;
  check(last == 4, "async_generator filter, map and take");

  co_return failures;
}

}  // namespace

int main() {
  boost::asio::io_context io;
  int failures = -1;
  std::size_t captured = 0;
  coral::spawn(io, run_all()).then([&](int f) { failures = f; });
  // A job's task made by a callable that holds what the task refers to. (The lambda is a
  // coroutine: in C++20 a lambda cannot be marked CORAL_CORO_WRAPPER without a C++23 warning.)
  coral::spawn(io, [text = std::string("captured")]() -> coral::task<std::size_t> {
    co_return co_await length_of(text);
  }).then([&](std::size_t n) { captured = n; });
  io.run();
  if (captured != 8) {
    std::printf("failed: spawn of a factory\n");
    failures += 1;
  }
  std::printf("failures: %d\n", failures);
  return failures == 0 ? 0 : 1;
}
