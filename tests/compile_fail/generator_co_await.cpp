// Must not compile: a generator body runs synchronously inside its consumer's call; it cannot
// co_await.
#include <coral/generator.hpp>
#include <coroutine>

coral::generator<int> awaits() {
  co_await std::suspend_always{};
  co_yield 1;
}

int main() {
  return awaits().sum();
}
