#!/usr/bin/env bash
# Scaling benchmark: coral's HTTP and echo demos against the Asio-native servers (Beast's HTTP
# server, bench/net/asio_echo_server) for N = 1, 2, 4, 8 server threads, with the server pinned
# to CPUs 0..N-1 and the load generators (wrk, echo_load) to the CPUs after them (taskset), so
# that the load never takes the server's cores. N stops where the machine has too few CPUs left
# for the load (at least as many load CPUs as server CPUs, up to 8).
#   http, io_context per thread: coral --io-pool N       vs Beast --io-contexts N
#   http, shared io_context:     coral --threads N       vs Beast --threads N
#   echo:                        coral --io-pool N       vs asio_echo_server --threads N
# Printed per case: requests (round trips) per second, wrk's p99 and the server's CPU time per
# request, as `case=... coral=... asio=... unit=... ratio=coral/asio`.
#
#   bash scripts/bench_scale.sh                 # builds static binaries (build/static), then runs
#   BENCH_BIN=DIR bash scripts/bench_scale.sh   # runs the binaries in DIR, builds nothing
#   bash scripts/bench_scale.sh --build-only    # builds them into build/static/bin, to copy
#
# The binaries are linked statically, so that build/static/bin and this script can be copied to
# a many-core machine that has no compiler. WRK is the command that runs wrk there (for example
# a copied wrk with its loader: "DIR/ld-linux-x86-64.so.2 --library-path DIR DIR/wrk").
# DURATION=10 seconds per run. On a machine with fewer than 4 CPUs only N = 1 runs, and the
# figures are not scaling figures (the script says so).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-10}
programs=(http_server echo_server beast_http_server asio_echo_server echo_load)

if [[ -z "${BENCH_BIN:-}" ]]; then
  bash scripts/deps.sh
  command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
  cmake -S . -B build/static -DCMAKE_BUILD_TYPE=Release -DCORAL_BUILD_BENCH=ON -DCORAL_BUILD_TESTS=OFF \
    -DCORAL_BUILD_EXAMPLES=ON -DCMAKE_EXE_LINKER_FLAGS=-static >/dev/null
  cmake --build build/static -j2 --target "${programs[@]}"
  mkdir -p build/static/bin
  for p in http_server echo_server; do cp build/static/examples/net/$p build/static/bin/; done
  for p in beast_http_server asio_echo_server echo_load; do cp build/static/bench/$p build/static/bin/; done
  [[ "${1:-}" == "--build-only" ]] && { echo "static binaries in build/static/bin"; exit 0; }
fi
bin=${BENCH_BIN:-build/static/bin}
coral_http=$bin/http_server
beast_http=$bin/beast_http_server
# shellcheck source=scripts/bench_net_common.sh
source scripts/bench_net_common.sh
ulimit -n "$(ulimit -Hn)"

cpus=$(nproc)
echo "# $cpus CPUs: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
if ((cpus < 4)); then
  echo "# fewer than 4 CPUs: N = 1 only, server and load on one CPU each; these are not scaling figures"
fi

# echo_run <server...>: sets rt (round trips per second, summed over one echo_load per load CPU)
echo_run() {
  start "$@"
  local outs=() i cpu
  for ((i = 0; i < load_n; i++)); do
    cpu=$((n + i))
    taskset -c "$cpu" "$bin/echo_load" --port "$port" --connections $((64 / load_n + 1)) --size 64 \
      --seconds "$duration" >"$bench_out.echo$i" &
    outs+=($!)
  done
  wait "${outs[@]}"
  stop
  rt=$(cat "$bench_out".echo* | sed 's/.*=//' | awk '{ s += $1 } END { print s }')
  rm -f "$bench_out".echo*
}

for n in 1 2 4 8; do
  load_n=$((cpus - n < 8 ? cpus - n : 8))
  ((load_n >= n || (n == 1 && load_n >= 1))) || break
  export SERVER_CPUS="0-$((n - 1))" LOAD_CPUS="$n-$((n + load_n - 1))"
  export WRK_ARGS="-t$load_n -c$((64 * n))"
  echo "# N=$n: server on CPUs $SERVER_CPUS, load on CPUs $LOAD_CPUS ($WRK_ARGS)"
  http_case "${n}_io_contexts" "--io-pool $n" "--io-contexts $n"
  http_case "${n}_shared" "--threads $n" "--threads $n"
  echo_run "$bin/echo_server" --io-pool "$n"
  coral=$rt
  echo_run "$bin/asio_echo_server" --threads "$n"
  line "echo_${n}_threads" "$coral" "$rt" round_trips/s
done
