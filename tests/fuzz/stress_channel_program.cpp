#define BOOST_TEST_MODULE coral channel program stress
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <iomanip>
#include <random>
#include <sstream>

#include "channel_program.hpp"

// Random programs of channel and select operations (the fuzz target's interpreter, fed by a
// seeded PRNG instead of the fuzzer), run on every executor kind, with cancellations and closes
// from the driving thread while the tasks run on others. A failure prints the program's bytes:
// on the stepped io_context they reproduce it through the fuzz target (scripts/fuzz.sh).

namespace {

long programs_per_kind() {
  if (const char* v = std::getenv("CORAL_CHANNEL_PROGRAMS")) return std::atol(v);
  return 1000;
}

std::string hex(const std::vector<std::uint8_t>& bytes) {
  std::ostringstream s;
  for (auto b : bytes) s << std::hex << std::setw(2) << std::setfill('0') << int(b);
  return s.str();
}

void run_programs(coral_fuzz::executor_kind kind, unsigned seed) {
  std::mt19937 rng(seed);
  const auto& durations =
      kind == coral_fuzz::executor_kind::stepped ? coral_fuzz::reproducible_durations : coral_fuzz::racing_durations;
  coral_fuzz::statistics total;
  const long n = programs_per_kind();
  for (long i = 0; i < n; ++i) {
    std::vector<std::uint8_t> bytes(32 + rng() % 224);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    const coral_fuzz::program p = coral_fuzz::decode(bytes.data(), bytes.size(), durations);
    const coral_fuzz::report r = coral_fuzz::run(p, kind);
    total += r.stats;
    if (!r.failures.empty()) {
      std::string broken;
      for (const auto& f : r.failures) broken += "\n  " + f;
      BOOST_ERROR("program " << i << " on " << coral_fuzz::name_of(kind) << " (bytes " << hex(bytes) << "):\n"
                             << coral_fuzz::describe(p) << "broken:" << broken);
      return;
    }
  }
  BOOST_TEST_MESSAGE(coral_fuzz::name_of(kind) << ": " << total.text());
  // The programs must have exercised what they check, or they checked nothing.
  BOOST_TEST(total.n[static_cast<std::size_t>(coral_fuzz::stat::received)] > 0);
  BOOST_TEST(total.n[static_cast<std::size_t>(coral_fuzz::stat::selects)] > 0);
  BOOST_TEST(total.n[static_cast<std::size_t>(coral_fuzz::stat::aborted)] > 0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(channel_programs)

BOOST_AUTO_TEST_CASE(random_programs_on_an_io_context_stepped_by_one_thread_keep_every_rule) {
  run_programs(coral_fuzz::executor_kind::stepped, 1);
}
BOOST_AUTO_TEST_CASE(random_programs_on_an_io_context_with_one_thread_keep_every_rule) {
  run_programs(coral_fuzz::executor_kind::io_context_1_thread, 2);
}
BOOST_AUTO_TEST_CASE(random_programs_on_an_io_context_with_two_threads_keep_every_rule) {
  run_programs(coral_fuzz::executor_kind::io_context_2_threads, 3);
}
BOOST_AUTO_TEST_CASE(random_programs_on_a_thread_pool_with_a_strand_per_task_keep_every_rule) {
  run_programs(coral_fuzz::executor_kind::pool_strands, 4);
}
BOOST_AUTO_TEST_CASE(random_programs_on_inline_executor_keep_every_rule) {
  run_programs(coral_fuzz::executor_kind::inline_exec, 5);
}
BOOST_AUTO_TEST_CASE(random_programs_on_pool_executor_keep_every_rule) {
  run_programs(coral_fuzz::executor_kind::pool_exec, 6);
}

BOOST_AUTO_TEST_SUITE_END()
