// Boost 1.81's asio::awaitable cannot await a task<T> that returns a value directly: the error
// names the one-line wrapper.
#include <boost/asio/awaitable.hpp>
#include <coral/coral.hpp>

coral::task<int> value() {
  co_return 1;
}

boost::asio::awaitable<int> legacy() {
  int v = co_await value();
  co_return v;
}
