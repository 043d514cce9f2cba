#!/usr/bin/env bash
# Builds coral and runs the demo (examples/tour.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCORAL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j2 --target tour
./build/release/examples/tour
