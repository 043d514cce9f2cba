#!/usr/bin/env bash
# Instructions per operation of each case of bench_costs, coral vs the Asio-native way, counted
# by callgrind: the difference between a run of 2N operations and a run of N, over N, so that
# set-up and tear-down cancel out. Each run is one case on one side alone. Needs valgrind and a
# Release build of bench/bench_costs. Usage: costs_instructions.sh [binary] [N] [case...]
set -euo pipefail
bin=${1:-build/release/bench/bench_costs}
n=${2:-5000}
shift $(($# < 2 ? $# : 2))
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  cases=(await_immediate yield spawn_handler spawn_job channel_pingpong channel_buffered when_all_10
    select_2_waiting mutex_contended timeout_op sleep)
fi
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" "$3" 2>&1 |
    awk '/refs:/ {gsub(",", "", $4); print $4}'
}
per_op() { echo $((($(count "$1" "$2" $((2 * n))) - $(count "$1" "$2" "$n")) / n)); }
for c in "${cases[@]}"; do
  coral=$(per_op "$c" coral)
  asio=$(per_op "$c" asio)
  awk -v name="$c" -v c="$coral" -v a="$asio" \
    'BEGIN { printf "case=%s_instructions coral=%d asio=%d unit=instructions/op ratio=%.3f\n", name, c, a, c / a }'
done
