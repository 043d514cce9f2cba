// An existing Asio program's style: io_context::work is deprecated Asio API that such code still
// uses; it must keep compiling once coral is linked.
#include <boost/asio/io_context.hpp>
#include <coral/coral.hpp>

coral::task<int> answer() {
  co_return 42;
}

int main() {
  boost::asio::io_context ctx;
  boost::asio::io_context::work keep_running(ctx);
  auto j = coral::spawn(ctx, answer());
  j.then([&](int) { ctx.stop(); });
  ctx.run();
  return j.get_result() == 42 ? 0 : 1;
}
