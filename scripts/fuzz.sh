#!/usr/bin/env bash
# Builds a libFuzzer target with clang 19 (ASan + UBSan) and fuzzes it for a given number of
# seconds, one job, starting from its committed seed corpus:
#   channel  the channel and select machinery (tests/fuzz/fuzz_channel.cpp)
#   http     the HTTP demo's request path (tests/fuzz/fuzz_http.cpp)
#   lines    the echo and chat demos' line protocols (tests/fuzz/fuzz_lines.cpp)
#   scripts/fuzz.sh [channel|http|lines] [seconds] [extra libFuzzer arguments...]
#   scripts/fuzz.sh channel 0 crash-<hash>   # replays one input (prints the program it decodes to)
# New inputs go to build/fuzz/corpus_<target> (the committed seeds stay as they are); crashes to
# build/fuzz/artifacts/. (A first argument that is a number means channel, as before.)
set -euo pipefail
cd "$(dirname "$0")/.."
target=channel
if [[ "${1:-}" == channel || "${1:-}" == http || "${1:-}" == lines ]]; then
  target=$1
  shift
fi
seconds=${1:-60}
shift || true
build=build/fuzz
# (With task tracking compiled out: the one build of CI's that checks that setting.)
cmake -S . -B $build -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
  -DCORAL_FUZZ=ON -DCORAL_BUILD_TESTS=OFF -DCORAL_BUILD_EXAMPLES=OFF -DCORAL_TASK_TRACKING=OFF >/dev/null
nice -n 19 cmake --build $build -j"${CORAL_JOBS:-1}" --target fuzz_$target
mkdir -p $build/corpus_$target $build/artifacts
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [ "$seconds" = 0 ]; then
  export CORAL_FUZZ_DESCRIBE=1
  exec $build/tests/fuzz/fuzz_$target "$@"
fi
max_len=512
[ $target = channel ] || max_len=4096
exec nice -n 19 $build/tests/fuzz/fuzz_$target -max_total_time="$seconds" -max_len=$max_len \
  -timeout=30 -print_final_stats=1 -artifact_prefix=$build/artifacts/ "$@" \
  $build/corpus_$target tests/fuzz/corpus_$target
