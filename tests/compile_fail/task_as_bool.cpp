// A task is not a truth value: `a() || b()` is a task that races a() and b() (co_await it).
#include <coral/coral.hpp>

coral::task<int> a() {
  co_return 1;
}
coral::task<int> b() {
  co_return 2;
}

bool wrong() {
  bool r = a() || b();
  return r;
}
