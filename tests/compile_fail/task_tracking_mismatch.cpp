// Built with the other CORAL_TASK_TRACKING setting than coral's compiled part: must not link (the
// two disagree on the layout of coral's types), and the error names the cause.
#include <coral/coral.hpp>

int main() {
  boost::asio::io_context io;
  auto j = coral::spawn(io.get_executor(), []() -> coral::task<> { co_return; });
  io.run();
}
