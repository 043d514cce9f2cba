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
#   files: GET of a 4 KiB and a 1 MiB file: http_server --root (reads through io_uring, and on its
#         thread pool with --file-reads pool) against nginx serving the same directory (sendfile
#         on, as many workers as the demo has threads), requests per second, p99, CPU per request
# The *_bare_* cases compare the demo servers with bare baselines (--bare 1: no time-outs, no
# limits, no strands): what the demos' robustness costs.
# DURATION=10 (seconds per load run); ONLY="files https" runs those groups alone (echo, http,
# https, files, memory). Installs what is missing (wrk and nginx too).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
for tool in wrk openssl nginx; do
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
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }

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
  want echo && echo_case "${threads}_threads" "--threads $threads" "--threads $threads"
  want http && http_case "${threads}_threads" "--threads $threads" "--threads $threads"
done
if want echo; then
  echo_case io_pool_2 "--io-pool 2" "--threads 2"
  # The demo servers' own cost: against the baselines with --bare 1 (no time-outs, no limits, no
  # strands), the floor of what a server can cost.
  echo_case bare_1_threads "--threads 1" "--threads 1 --bare 1"
fi
if want http; then
  http_case io_pool_2 "--io-pool 2" "--threads 2"
  http_case io_pool_2_vs_io_contexts "--io-pool 2" "--io-contexts 2"
  http_case bare_1_threads "--threads 1" "--threads 1 --bare 1"
  http_case bare_2_threads "--threads 2" "--threads 2 --bare 1"
  http_case bare_io_pool_2 "--io-pool 2" "--io-contexts 2 --bare 1"
fi

tls=$(mktemp -d)
trap 'rm -rf "$bench_out" "$bench_out".* "$tls"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/key.pem" -out "$tls/cert.pem" \
  -days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
tls_args="--tls-cert $tls/cert.pem --tls-key $tls/key.pem"
if want https; then
  SCHEME=https http_case 1_threads "--threads 1 $tls_args" "--threads 1 $tls_args"
  SCHEME=https http_case io_pool_2_vs_io_contexts "--io-pool 2 $tls_args" "--io-contexts 2 $tls_args"
fi

# Static files against nginx (sendfile on, logs off, one worker per demo thread), on a free port.
site=$(mktemp -d)
trap 'rm -rf "$bench_out" "$bench_out".* "$tls" "$site"' EXIT
mkdir -p "$site/www" "$site/nginx"
head -c 4096 /dev/urandom >"$site/www/4k.bin"
head -c 1048576 /dev/urandom >"$site/www/1m.bin"
chmod 755 "$site" "$site/www" && chmod 644 "$site/www/"*  # (nginx's workers run as nobody)
# ok <url> <file>: the server answers 200 with the file, or the case stops.
ok() {
  curl -s "$1" | cmp -s - "$2" || { echo "$1 did not serve $2" >&2; exit 1; }
}
nginx_start() {
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$site/nginx/nginx.conf" <<CONF
worker_processes $1;
daemon off;
pid $site/nginx/nginx.pid;
error_log $site/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path $site/nginx; proxy_temp_path $site/nginx; fastcgi_temp_path $site/nginx;
  uwsgi_temp_path $site/nginx; scgi_temp_path $site/nginx;
  server { listen 127.0.0.1:$port; root $site/www; }
}
CONF
  nginx -c "$site/nginx/nginx.conf" -p "$site/nginx" &
  pid=$!
  for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/4k.bin" && break; sleep 0.05; done
}
# files_case <name> <file> <workers> <coral args>
files_case() {
  start "$coral_http" --root "$site/www" $4
  ok "http://127.0.0.1:$port/files/$2" "$site/www/$2"
  load_run "/files/$2"
  stop
  local coral_rps=$rps coral_p99=$p99 coral_cpu=$cpu
  nginx_start "$3"
  ok "http://127.0.0.1:$port/$2" "$site/www/$2"
  load_run "/$2"
  kill -QUIT "$pid"
  wait "$pid" || true
  line "files_$1" "$coral_rps" "$rps" requests/s
  line "files_p99_$1" "$coral_p99" "$p99" ms
  line "files_cpu_$1" "$coral_cpu" "$cpu" us/request
}
if want files; then
  for file in 4k 1m; do
    files_case "${file}_1_threads_vs_nginx" "$file.bin" 1 "--threads 1"
    files_case "${file}_io_pool_2_vs_nginx" "$file.bin" 2 "--io-pool 2"
    files_case "${file}_pool_reads_1_threads_vs_nginx" "$file.bin" 1 "--threads 1 --file-reads pool"
  done
fi

if want memory; then
  start $bin/examples/net/echo_server
  coral=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
  stop
  start $bin/bench/asio_echo_server
  asio=$($bin/bench/echo_load --port "$port" --idle 10000 --pid "$pid" | sed 's/^[^=]*=\([0-9.]*\).*/\1/')
  stop
  line echo_idle_memory "$coral" "$asio" bytes/connection
fi
