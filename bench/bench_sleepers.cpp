// sleepers: N tasks on one io_context, each sleeping a random 1-6 s. Reports the peak resident
// memory per sleeping task and the p50/p99 lateness of the wake-ups. Each side runs in a forked
// child of this binary, so each has its own peak RSS.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coral/coral.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <vector>

#include "report.hpp"

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

struct outcome {
  double bytes_per_task;
  double p50_ms;
  double p99_ms;
};

long resident_bytes() {
  long pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

coral::task<> coral_sleeper(clock_type::time_point deadline, std::int32_t* lateness) {
  co_await coral::sleep_until(deadline);
  *lateness = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - deadline).count();
}

asio::awaitable<void> asio_sleeper(clock_type::time_point deadline, std::int32_t* lateness) {
  asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
  co_await timer.async_wait(asio::use_awaitable);
  *lateness = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - deadline).count();
}

template <class Spawn>
outcome run_side(long n, Spawn spawn_one) {
  std::vector<std::int32_t> lateness(n, -1);
  std::vector<clock_type::duration> delays(n);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> ms(1000, 6000);
  for (auto& d : delays) d = std::chrono::milliseconds(ms(rng));
  asio::io_context ctx(1);
  const long baseline = resident_bytes();
  const auto start = clock_type::now();
  for (long i = 0; i < n; ++i) spawn_one(ctx, start + delays[i], &lateness[i]);
  ctx.run();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak = usage.ru_maxrss * 1024.0;
  std::sort(lateness.begin(), lateness.end());
  if (lateness.front() < 0) std::abort();  // a sleeper never woke
  return {(peak - baseline) / n, lateness[n / 2] / 1000.0, lateness[n * 99 / 100] / 1000.0};
}

// Runs `side` in a child process and returns what it measured.
template <class Side>
outcome in_child(Side side) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  pid_t pid = fork();
  if (pid == 0) {
    outcome o = side();
    if (write(fds[1], &o, sizeof o) != sizeof o) _exit(1);
    _exit(0);
  }
  outcome o{};
  if (read(fds[0], &o, sizeof o) != sizeof o) std::abort();
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  close(fds[1]);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  outcome c = in_child([&] {
    return run_side(n, [](asio::io_context& ctx, clock_type::time_point deadline, std::int32_t* lateness) {
      coral::spawn(ctx, coral_sleeper(deadline, lateness));
    });
  });
  outcome a = in_child([&] {
    return run_side(n, [](asio::io_context& ctx, clock_type::time_point deadline, std::int32_t* lateness) {
      asio::co_spawn(ctx, asio_sleeper(deadline, lateness), asio::detached);
    });
  });
  report("sleepers_memory", c.bytes_per_task, a.bytes_per_task, "bytes/task");
  report("sleepers_p50_lateness", c.p50_ms, a.p50_ms, "ms");
  report("sleepers_p99_lateness", c.p99_ms, a.p99_ms, "ms");
  std::printf("summary: %ld sleepers; memory ratio=%.3f (target <= 0.5), p99 lateness ratio=%.3f (target <= 1.0)\n", n,
              c.bytes_per_task / a.bytes_per_task, c.p99_ms / a.p99_ms);
}
