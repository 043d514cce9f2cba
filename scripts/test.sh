#!/usr/bin/env bash
# Builds and runs every test: all of them under AddressSanitizer + UndefinedBehaviorSanitizer,
# and the cross-thread ones again under ThreadSanitizer (g++); then everything again with clang 19
# (unoptimised, warnings as errors), the library with the generator and task tests with clang 14, and
# a minute of fuzzing of the HTTP demo's request path and half a minute of the echo and chat
# demos' sessions (clang 19, libFuzzer, ASan + UBSan).
# docs/platforms.md says what else was checked by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --tests
jobs=2
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# tests/tsan.supp: one false report of g++'s TSan (it cannot model atomic_thread_fence), explained there.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp:history_size=4"
# How long each step took, for keeping the whole under CI's time.
step_started=$SECONDS
step_done() {
  echo "== $1: $((SECONDS - step_started)) s (total $SECONDS s)"
  step_started=$SECONDS
}

# Task tracking is compiled in (the default) everywhere but in the fuzzing build (scripts/fuzz.sh),
# which builds and runs the compiled-out setting.
# (-O0: g++ compiles these translation units three times faster than at -O1 with the sanitizers,
# and the tests take about a minute longer.)
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DCORAL_SANITIZE=address -DCMAKE_CXX_FLAGS=-O0 >/dev/null
cmake --build build/asan -j$jobs
step_done "ASan + UBSan build"
# (Every public header compiling on its own, and coral as a CMake subproject, an installed package
# and a pkg-config package, are checked once, in the clang 19 build: they build coral on their own.)
(cd build/asan && ctest --output-on-failure -j$jobs -E '^(compile_public_headers_alone|cmake_.*|pkg_config_consumer)$')
step_done "ASan + UBSan tests"

cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=Debug -DCORAL_SANITIZE=thread -DCMAKE_CXX_FLAGS=-O1 -DCORAL_BUILD_EXAMPLES=OFF >/dev/null
# (Only what the cross-thread tests run: their executables, less a minute of building the rest.)
tsan_targets=$(cd build/tsan && ctest -N -L cross_thread | sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p' |
  sed 's/^exit_with_running_tasks_[0-9]*$/exit_with_running_tasks/' | sort -u)
cmake --build build/tsan -j$jobs --target $tsan_targets
(cd build/tsan && ctest --output-on-failure -j$jobs -L cross_thread)
step_done "TSan build and tests"

# clang 19: everything, and every test, without sanitizers (the runs above are the sanitizer ones;
# this one is about what another compiler accepts and warns about, with coral's assertions on).
# Unoptimised: clang compiles these translation units three times faster at -O0 than at -O2, and
# the optimised build is checked by hand (docs/platforms.md).
cmake -S . -B build/clang19 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCORAL_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build/clang19 -j$jobs
step_done "clang 19 build"
(cd build/clang19 && ctest --output-on-failure -j$jobs)
step_done "clang 19 tests"

# clang 14, Debian's default clang++: the library, the tests of the headers it is most particular
# about (generator.hpp's constraints, the task machinery, task tracking without
# std::source_location) and the compile tests. All of it
# would take as long again as the clang 19 build, more than CI's time allows (docs/platforms.md).
cmake -S . -B build/clang14 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-14 -DCORAL_WARNINGS_AS_ERRORS=ON \
  -DCORAL_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/clang14 -j$jobs --target coral test_generator test_task test_tracking compile_own_asio_namespace
(cd build/clang14 && ctest --output-on-failure -j$jobs -R '^(test_generator|test_task|test_tracking|compile_fail_.*|compile_own_asio_namespace|link_fail_.*)$')
step_done "clang 14 build and tests"

# The HTTP demo's request path under libFuzzer for a minute, and the echo and chat sessions for
# half a minute, from their seed corpora (which every build above also replays, as
# fuzz_http_corpus and fuzz_lines_corpus). A finding fails CI with the input that found it.
CORAL_JOBS=$jobs bash scripts/fuzz.sh http 60
CORAL_JOBS=$jobs bash scripts/fuzz.sh lines 30
step_done "fuzzing"
