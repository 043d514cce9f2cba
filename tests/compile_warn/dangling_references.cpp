// References a coroutine outlives, as clang 19 reports them with CORAL_CORO_LIFETIME_CHECKS: each
// line marked `expect:` must get exactly that warning, and no other line any warning.
#include <boost/asio/io_context.hpp>
#include <coral/coral.hpp>
#include <string>
#include <vector>

coral::task<std::size_t> length_of(const std::string& text) {
  co_return text.size();
}

coral::generator<char> characters_of(const std::string& text) {
  for (char c : text) co_yield c;
}

// A temporary bound to a reference parameter of a task that is kept.
coral::task<> kept_task() {
  auto length = length_of(std::string("gone"));  // expect: -Wdangling
  co_await std::move(length);
}

// A local returned inside a task from a function that is not a coroutine.
CORAL_CORO_WRAPPER coral::task<std::size_t> returned_local() {
  std::string local = "gone";
  return length_of(local);  // expect: -Wreturn-stack-address
}

// The same with a generator over a local range, which it keeps a reference to.
CORAL_CORO_WRAPPER coral::generator<int> returned_local_range() {
  std::vector<int> local{1, 2, 3};
  return coral::generator<int>::from(local);  // expect: -Wreturn-stack-address
}

// A capturing lambda coroutine called at once: the lambda, and its captures, die at the semicolon.
coral::task<> lambda_captures() {
  auto length = [text = std::string("gone")]() -> coral::task<std::size_t> {  // expect: -Wdangling
    co_return text.size();
  }();
  co_await std::move(length);
}

// The same mistake with a generator.
std::size_t kept_generator() {
  auto characters = characters_of(std::string("gone"));  // expect: -Wdangling
  std::size_t n = 0;
  for (char c : characters) n += c != 0;
  return n;
}

// Not reported by clang 19: the temporary dies when spawn() returns, before the task runs, but
// the task is handed to a function, not kept in a variable (docs/tasks.md).
void spawned(boost::asio::io_context& io) {
  coral::spawn(io, length_of(std::string("gone")));
}
