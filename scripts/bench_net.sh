#!/usr/bin/env bash
# Network benchmarks, side by side in one run: coral's examples/net servers against the same
# servers written with asio::awaitable (bench/net), on 1 and 2 server threads.
#   echo: 64 connections x 64-byte messages (bench/net/echo_load), round trips per second;
#         memory per idle connection (10,000 connections, server RSS growth / connections)
#   http: GET / with wrk -t2 -c64 (keep-alive): requests per second and p99 latency
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

for threads in 1 2; do
  start $bin/examples/net/echo_server --threads $threads
  coral=$($bin/bench/echo_load --port "$port" --connections 64 --size 64 --seconds "$duration" | sed 's/.*=//')
  stop
  start $bin/bench/asio_echo_server --threads $threads
  asio=$($bin/bench/echo_load --port "$port" --connections 64 --size 64 --seconds "$duration" | sed 's/.*=//')
  stop
  line "echo_${threads}_threads" "$coral" "$asio" round_trips/s

  start $bin/examples/net/http_server --threads $threads
  wrk -t2 -c64 -d"${duration}s" --latency "http://127.0.0.1:$port/" >"$out.wrk"
  coral_rps=$(awk '/Requests\/sec/ { print $2 }' "$out.wrk")
  coral_p99=$(p99_ms <"$out.wrk")
  stop
  start $bin/bench/beast_http_server --threads $threads
  wrk -t2 -c64 -d"${duration}s" --latency "http://127.0.0.1:$port/" >"$out.wrk"
  asio_rps=$(awk '/Requests\/sec/ { print $2 }' "$out.wrk")
  asio_p99=$(p99_ms <"$out.wrk")
  stop
  line "http_${threads}_threads" "$coral_rps" "$asio_rps" requests/s
  line "http_p99_${threads}_threads" "$coral_p99" "$asio_p99" ms
done

start $bin/examples/net/echo_server
coral=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
stop
start $bin/bench/asio_echo_server
asio=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
stop
line echo_idle_memory "$coral" "$asio" bytes/connection
rm -f "$out" "$out.wrk"
