// libFuzzer target: the input bytes are a program of channel and select operations (see
// channel_program.hpp), run on an io_context that this thread steps, so that a finding
// reproduces from its input alone. A broken rule prints the program and aborts. With
// CORAL_FUZZ_DESCRIBE set, every program is printed with its statistics (to read a replayed input).

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "channel_program.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const coral_fuzz::program p = coral_fuzz::decode(data, size, coral_fuzz::reproducible_durations);
  const coral_fuzz::report r = coral_fuzz::run(p, coral_fuzz::executor_kind::stepped);
  static const bool describe_every_program = std::getenv("CORAL_FUZZ_DESCRIBE") != nullptr;
  if (describe_every_program) {
    std::fprintf(stderr, "%s%s\n", coral_fuzz::describe(p).c_str(), r.stats.text().c_str());
  }
  if (!r.failures.empty()) {
    std::fprintf(stderr, "%s", coral_fuzz::describe(p).c_str());
    for (const auto& f : r.failures) std::fprintf(stderr, "broken: %s\n", f.c_str());
    std::abort();
  }
  return 0;
}
