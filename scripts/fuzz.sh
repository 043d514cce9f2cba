#!/usr/bin/env bash
# Builds the libFuzzer target with clang 19 (ASan + UBSan) and fuzzes the channel and select
# machinery for a given number of seconds, one job, starting from the committed seed corpus.
#   scripts/fuzz.sh [seconds] [extra libFuzzer arguments...]
#   scripts/fuzz.sh 0 crash-<hash>      # replays one input (prints the program it decodes to)
# New inputs go to build/fuzz/corpus_channel (the committed seeds stay as they are); crashes to
# build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=build/fuzz
cmake -S . -B $build -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
  -DCORAL_FUZZ=ON -DCORAL_BUILD_TESTS=OFF -DCORAL_BUILD_EXAMPLES=OFF >/dev/null
nice -n 19 cmake --build $build -j1 --target fuzz_channel
mkdir -p $build/corpus_channel $build/artifacts
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [ "$seconds" = 0 ]; then
  export CORAL_FUZZ_DESCRIBE=1
  exec $build/tests/fuzz/fuzz_channel "$@"
fi
exec nice -n 19 $build/tests/fuzz/fuzz_channel -max_total_time="$seconds" -max_len=512 \
  -timeout=30 -print_final_stats=1 -artifact_prefix=$build/artifacts/ "$@" \
  $build/corpus_channel tests/fuzz/corpus_channel
