// Built with BOOST_ASIO_ENABLE_HANDLER_TRACKING and linked against a coral built without it: must
// not link (the two disagree on the layout of Asio's classes), and the error names the cause.
#include <coral/coral.hpp>

int main() {
  boost::asio::io_context io;
  auto j = coral::spawn(io.get_executor(), []() -> coral::task<> { co_return; });
  io.run();
}
