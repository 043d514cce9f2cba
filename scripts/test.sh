#!/usr/bin/env bash
# Builds and runs every test: all of them under AddressSanitizer + UndefinedBehaviorSanitizer,
# and the cross-thread ones again under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --tests
jobs=2
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# tests/tsan.supp: one false report of g++'s TSan (it cannot model atomic_thread_fence), explained there.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp:history_size=4"

cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DCORAL_SANITIZE=address -DCMAKE_CXX_FLAGS=-O1 >/dev/null
cmake --build build/asan -j$jobs
(cd build/asan && ctest --output-on-failure -j$jobs)

cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=Debug -DCORAL_SANITIZE=thread -DCMAKE_CXX_FLAGS=-O1 -DCORAL_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/tsan -j$jobs
(cd build/tsan && ctest --output-on-failure -j$jobs -L cross_thread)
