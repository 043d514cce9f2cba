// Runs N awaits of a child that completes at once, on one side only ("coral" or "asio"), so that
// bench/await_instructions.sh can count instructions per await with callgrind: a figure that,
// unlike time, does not move with the load of a shared machine.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <coral/coral.hpp>
#include <cstdlib>
#include <cstring>

#include "await_workload.hpp"

namespace asio = boost::asio;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const long n = std::atol(argv[2]);
  asio::io_context ctx(1);
  long result = 0;
  if (std::strcmp(argv[1], "coral") == 0) {
    auto j = coral::spawn(ctx, await_workload::coral_loop(n));
    ctx.run();
    result = j.get_result();
  } else {
    asio::co_spawn(ctx, await_workload::asio_loop(n), [&](std::exception_ptr, long v) { result = v; });
    ctx.run();
  }
  return result == n ? 0 : 1;
}
