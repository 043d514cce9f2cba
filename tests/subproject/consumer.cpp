// An existing Asio program, built with coral linked in: coral must leave Asio as the program
// configured it (deprecated API included, which such programs may still use).
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <coral/coral.hpp>

#if defined(BOOST_ASIO_NO_DEPRECATED)
#error "coral switched Asio's deprecated API off"
#endif

coral::task<int> answer() {
  co_return 42;
}

int main() {
  boost::asio::io_context ctx;
  auto keep_running = boost::asio::make_work_guard(ctx);
  auto j = coral::spawn(ctx, answer());
  j.then([&](int) { ctx.stop(); });
  ctx.run();
  return j.get_result() == 42 ? 0 : 1;
}
