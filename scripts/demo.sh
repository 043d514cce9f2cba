#!/usr/bin/env bash
# Builds coral and runs the demo: the tour (examples/tour.cpp), then the network side: http_server
# on a free port serving docs/ as static files, http_client against it (its pages, then files read
# through io_uring where the kernel allows), ten /sleep requests at once, and a clean SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCORAL_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j2 --target tour http_server http_client
./build/release/examples/tour

echo
echo "== the network side: examples/net/http_server and http_client =="
out=$(mktemp)
./build/release/examples/net/http_server --port 0 --root docs >"$out" &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on //p' "$out")
echo "http_server (pid $server) listening on port $port"
./build/release/examples/net/http_client --port "$port"
echo
echo "static files (--root docs), and how the server reads them:"
./build/release/examples/net/http_client "http://127.0.0.1:$port/files/net-http-server.md" \
  "http://127.0.0.1:$port/files/images/chat-page.png" "http://127.0.0.1:$port/files/../README.md"
curl -s "http://127.0.0.1:$port/stats"
echo
echo "ten requests of /sleep?ms=1000 at once, on one server thread:"
urls=()
for i in $(seq 10); do urls+=("http://127.0.0.1:$port/sleep?ms=1000"); done
./build/release/examples/net/http_client "${urls[@]}" | tail -1
kill -TERM "$server"
status=0
wait "$server" || status=$?
echo "server output:"
sed 's/^/  /' "$out"
rm -f "$out"
echo "http_server exited with status $status after SIGTERM"
exit "$status"
