#!/usr/bin/env bash
# Network benchmarks, side by side in one run: coral's examples/net servers against the same
# servers written with asio::awaitable (bench/net), on 1 and 2 server threads (one io_context
# run by 2 threads), and coral on an io_pool of 2 contexts (--io-pool 2) against the baselines on
# 2 threads, and against Beast on 2 io_contexts of one thread each (--io-contexts 2).
#   echo: 64 connections x 64-byte messages (bench/net/echo_load), round trips per second;
#         memory per idle connection (10,000 connections, server RSS growth / connections)
#   http: GET / with wrk -t2 -c64 (keep-alive): requests per second, p99 latency, and the
#         server's CPU time per request (user + system, from /proc)
#   https: the same GET / over TLS (a throw-away certificate made with openssl; wrk keeps its
#         connections, so the load is records, not handshakes): coral's demo against Beast's
#         server serving HTTPS as Beast's examples do (beast::ssl_stream)
# The *_bare_* cases compare the demo servers with bare baselines (--bare 1: no time-outs, no
# limits, no strands): what the demos' robustness costs.
# DURATION=10 (seconds per load run). Installs what is missing (wrk too).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
for tool in wrk openssl; do
  command -v $tool >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $tool >/dev/null; }
done
duration=${DURATION:-10}
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCORAL_BUILD_BENCH=ON -DCORAL_BUILD_TESTS=OFF \
  -DCORAL_BUILD_EXAMPLES=ON >/dev/null
cmake --build build/release -j2 --target echo_server http_server asio_echo_server beast_http_server echo_load
bin=build/release
ulimit -n "$(ulimit -Hn)"

coral_http=$bin/examples/net/http_server
beast_http=$bin/bench/beast_http_server
# shellcheck source=scripts/bench_net_common.sh
source scripts/bench_net_common.sh

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

tls=$(mktemp -d)
trap 'rm -rf "$bench_out" "$bench_out".* "$tls"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/key.pem" -out "$tls/cert.pem" \
  -days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
tls_args="--tls-cert $tls/cert.pem --tls-key $tls/key.pem"
SCHEME=https http_case 1_threads "--threads 1 $tls_args" "--threads 1 $tls_args"
SCHEME=https http_case io_pool_2_vs_io_contexts "--io-pool 2 $tls_args" "--io-contexts 2 $tls_args"

start $bin/examples/net/echo_server
coral=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
stop
start $bin/bench/asio_echo_server
asio=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
stop
line echo_idle_memory "$coral" "$asio" bytes/connection
