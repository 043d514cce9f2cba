#!/usr/bin/env bash
# Network benchmarks, side by side in one run: coral's examples/net servers against the same
# servers written with asio::awaitable (bench/net), on 1 and 2 server threads (one io_context
# run by 2 threads), and coral on an io_pool of 2 contexts (--io-pool 2) against the baselines on
# 2 threads, and against Beast on 2 io_contexts of one thread each (--io-contexts 2).
#   echo: 64 connections x 64-byte messages (bench/net/echo_load), round trips per second;
#         memory per idle connection (10,000 connections, server RSS growth / connections)
#   http: GET / with wrk -t2 -c64 (keep-alive): requests per second, p99 latency, and the
#         server's CPU time per request (user + system, from /proc)
# The *_bare_* cases compare the demo servers with bare baselines (--bare 1: no time-outs, no
# limits, no strands): what the demos' robustness costs.
# DURATION=10 (seconds per load run). Installs what is missing (wrk too).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
duration=${DURATION:-10}
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCORAL_BUILD_BENCH=ON -DCORAL_BUILD_TESTS=OFF \
  -DCORAL_BUILD_EXAMPLES=ON >/dev/null
cmake --build build/release -j2 --target echo_server http_server asio_echo_server beast_http_server echo_load
bin=build/release
ulimit -n "$(ulimit -Hn)"

out=$(mktemp)
start() {  # start <program> <args...>: sets pid and port
  "$@" --port 0 >"$out" &
  pid=$!
  for _ in $(seq 200); do grep -q "listening on" "$out" && break; sleep 0.05; done
  port=$(sed -n 's/^listening on //p' "$out")
}
stop() { kill -TERM "$pid"; wait "$pid" || true; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
line() { echo "case=$1 coral=$2 asio=$3 unit=$4 ratio=$(ratio "$2" "$3")"; }
p99_ms() {  # wrk's 99% latency in ms
  awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }'
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# http_run <server...>: sets rps, p99 and cpu (server CPU µs per request)
http_run() {
  start "$@"
  local before
  before=$(cpu_ticks "$pid")
  wrk -t2 -c64 -d"${duration}s" --latency "http://127.0.0.1:$port/" >"$out.wrk"
  local used=$(($(cpu_ticks "$pid") - before))
  stop
  rps=$(awk '/Requests\/sec/ { print $2 }' "$out.wrk")
  p99=$(p99_ms <"$out.wrk")
  cpu=$(awk -v t="$used" -v hz="$(getconf CLK_TCK)" -v r="$rps" -v d="$duration" 'BEGIN { printf "%.2f", t / hz * 1e6 / (r * d) }')
}
# http_case <name> <coral args> <baseline args>
http_case() {
  http_run $bin/examples/net/http_server $2
  local coral_rps=$rps coral_p99=$p99 coral_cpu=$cpu
  http_run $bin/bench/beast_http_server $3
  line "http_$1" "$coral_rps" "$rps" requests/s
  line "http_p99_$1" "$coral_p99" "$p99" ms
  line "http_cpu_$1" "$coral_cpu" "$cpu" us/request
}
# echo_case <name> <coral args> <baseline args>
echo_case() {
  start $bin/examples/net/echo_server $2
  coral=$($bin/bench/echo_load --port "$port" --connections 64 --size 64 --seconds "$duration" | sed 's/.*=//')
  stop
  start $bin/bench/asio_echo_server $3
  asio=$($bin/bench/echo_load --port "$port" --connections 64 --size 64 --seconds "$duration" | sed 's/.*=//')
  stop
  line "echo_$1" "$coral" "$asio" round_trips/s
}

for threads in 1 2; do
  echo_case "${threads}_threads" "--threads $threads" "--threads $threads"
  http_case "${threads}_threads" "--threads $threads" "--threads $threads"
done
echo_case io_pool_2 "--io-pool 2" "--threads 2"
http_case io_pool_2 "--io-pool 2" "--threads 2"
http_case io_pool_2_vs_io_contexts "--io-pool 2" "--io-contexts 2"
# The demo servers' own cost: against the baselines with --bare 1 (no time-outs, no limits, no
# strands), the floor of what a server can cost.
echo_case bare_1_threads "--threads 1" "--threads 1 --bare 1"
http_case bare_1_threads "--threads 1" "--threads 1 --bare 1"
http_case bare_2_threads "--threads 2" "--threads 2 --bare 1"
http_case bare_io_pool_2 "--io-pool 2" "--io-contexts 2 --bare 1"

start $bin/examples/net/echo_server
coral=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
stop
start $bin/bench/asio_echo_server
asio=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
stop
line echo_idle_memory "$coral" "$asio" bytes/connection
rm -f "$out" "$out.wrk"
