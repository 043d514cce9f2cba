#!/usr/bin/env bash
# Builds the benchmarks (Release) and runs them, or only the ones named:
#   bash scripts/bench.sh [bench_core|bench_sleepers|bench_channel|bench_sync|bench_generator ...]
# Installs what is missing first, Boost.Context included (bench_generator's Boost.Coroutine2 side).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --bench
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCORAL_BUILD_BENCH=ON -DCORAL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j2
benches=("$@")
((${#benches[@]})) || benches=(bench_core bench_sleepers bench_channel bench_sync bench_generator)
for b in "${benches[@]}"; do
  "build/release/bench/$b"
done
