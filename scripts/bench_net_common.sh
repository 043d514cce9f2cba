# shellcheck shell=bash disable=SC2154
# Functions shared by scripts/bench_net.sh and scripts/bench_scale.sh (sourced, not run).
# Each output line: `case=<name> coral=<value> asio=<value> unit=<unit> ratio=<coral/asio>`.

bench_out=$(mktemp)
trap 'rm -f "$bench_out" "$bench_out".*' EXIT

# start <program> <args...>: starts a server on a free port; sets pid and port. SERVER_CPUS, when
# set, pins it (taskset -c).
start() {
  if [[ -n "${SERVER_CPUS:-}" ]]; then
    taskset -c "$SERVER_CPUS" "$@" --port 0 >"$bench_out" &
  else
    "$@" --port 0 >"$bench_out" &
  fi
  pid=$!
  for _ in $(seq 200); do grep -q "listening on" "$bench_out" && break; sleep 0.05; done
  port=$(sed -n 's/^listening on //p' "$bench_out")
  [[ -n "$port" ]] || { echo "$1 did not start" >&2; cat "$bench_out" >&2; exit 1; }
}
stop() { kill -TERM "$pid"; wait "$pid" || true; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
line() { echo "case=$1 coral=$2 asio=$3 unit=$4 ratio=$(ratio "$2" "$3")"; }
# wrk's 99% latency in ms, from its --latency output on stdin
p99_ms() {
  awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# The CPU ticks of a process and its children (nginx's workers).
tree_ticks() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do total=$((total + $(cpu_ticks "$p"))); done
  echo "$total"
}

# load_run <path>: runs wrk against the server on $port for <path> (default /); sets rps, p99 (ms)
# and cpu (the CPU µs per request of $pid and its children). WRK_ARGS (default -t2 -c64),
# LOAD_CPUS pins wrk, WRK is the command that runs wrk, SCHEME=https asks over TLS.
load_run() {
  local before load=()
  before=$(tree_ticks "$pid")
  [[ -n "${LOAD_CPUS:-}" ]] && load=(taskset -c "$LOAD_CPUS")
  # shellcheck disable=SC2086
  "${load[@]}" ${WRK:-wrk} ${WRK_ARGS:--t2 -c64} -d"${duration}s" --latency "${SCHEME:-http}://127.0.0.1:$port${1:-/}" >"$bench_out.wrk"
  local used=$(($(tree_ticks "$pid") - before))
  rps=$(awk '/Requests\/sec/ { print $2 }' "$bench_out.wrk")
  p99=$(p99_ms <"$bench_out.wrk")
  cpu=$(awk -v t="$used" -v hz="$(getconf CLK_TCK)" -v r="$rps" -v d="$duration" 'BEGIN { printf "%.2f", t / hz * 1e6 / (r * d) }')
}

# http_run <server...>: starts the server, load_run on /, stops it.
http_run() {
  start "$@"
  load_run /
  stop
}
# http_case <name> <coral args> <baseline args>: coral's demo ($coral_http) against Beast's
# server ($beast_http); the cases are named http_<name> (https_<name> with SCHEME=https)
http_case() {
  http_run "$coral_http" $2
  local coral_rps=$rps coral_p99=$p99 coral_cpu=$cpu
  http_run "$beast_http" $3
  local kind=${SCHEME:-http}
  line "${kind}_$1" "$coral_rps" "$rps" requests/s
  line "${kind}_p99_$1" "$coral_p99" "$p99" ms
  line "${kind}_cpu_$1" "$coral_cpu" "$cpu" us/request
}
