// Must not compile: an inherit-task has no executor to be spawned on.
#include <coral/spawn.hpp>

coral::task<int> unbound() {
  co_return 1;
}

int main() {
  auto j = coral::spawn(unbound());
}
