// An existing Asio program's style, with deprecated Asio API that such code may still use
// (io_context::wrap, deprecated in every Asio coral supports, removed in none): linking coral must
// not switch it off.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <coral/coral.hpp>

coral::task<int> answer() {
  co_return 42;
}

int main() {
  boost::asio::io_context ctx;
  auto keep_running = boost::asio::make_work_guard(ctx);
  auto j = coral::spawn(ctx, answer());
  j.then(ctx.wrap([&](int) { ctx.stop(); }));
  ctx.run();
  return j.get_result() == 42 ? 0 : 1;
}
