#!/usr/bin/env bash
# Instructions per `co_await child()` (child completes at once), coral vs asio::awaitable,
# counted by callgrind: the difference between runs of 200,000 and 100,000 awaits, so that set-up
# and tear-down cancel out. Needs valgrind and a Release build of bench/await_instructions.
set -euo pipefail
bin=${1:-build/release/bench/await_instructions}
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 | awk '/refs:/ {gsub(",", "", $4); print $4}'
}
per_await() { echo $(( ($(count "$1" 200000) - $(count "$1" 100000)) / 100000 )); }
c=$(per_await coral)
a=$(per_await asio)
awk -v c="$c" -v a="$a" 'BEGIN { printf "case=await_immediate_instructions coral=%d asio=%d unit=instructions/op ratio=%.3f\n", c, a, c / a }'
