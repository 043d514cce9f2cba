#!/usr/bin/env bash
# Installs what coral needs when it is missing (Debian 12, as root); --tests and --bench add what
# the tests and the benchmarks need. Boost 1.81 is named explicitly: Debian's plain libboost-dev
# is 1.74, too old for coral.
set -euo pipefail
missing=()
command -v g++ >/dev/null || missing+=(g++)
command -v cmake >/dev/null || missing+=(cmake)
command -v make >/dev/null || missing+=(make)
dpkg -s libboost1.81-dev >/dev/null 2>&1 || missing+=(libboost1.81-dev)
# OpenSSL, for HTTPS in the HTTP demo.
dpkg -s libssl-dev >/dev/null 2>&1 || missing+=(libssl-dev)
# curl, which the demo asks the server's /stats with.
command -v curl >/dev/null || missing+=(curl)
# liburing, for Asio's files on io_uring (the HTTP demo's static files).
dpkg -s liburing-dev >/dev/null 2>&1 || missing+=(liburing-dev)
if [[ "${1:-}" == "--tests" ]]; then
  dpkg -s libboost-test1.81-dev >/dev/null 2>&1 || missing+=(libboost-test1.81-dev)
  # The tests also build coral with clang 19 and with clang 14 (Debian's default clang++).
  command -v clang++-19 >/dev/null || missing+=(clang-19)
  command -v clang++-14 >/dev/null || missing+=(clang-14)
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  # The HTTPS tests make a throw-away CA and certificate with openssl, and ask with curl too.
  command -v openssl >/dev/null || missing+=(openssl)
  # The chat page's test opens it in a real browser: headless Chromium.
  command -v chromium >/dev/null || missing+=(chromium)
  # And fuzz the HTTP demo's request path for a minute (clang 19's libFuzzer).
  dpkg -s libfuzzer-19-dev >/dev/null 2>&1 || missing+=(libfuzzer-19-dev)
fi
# Boost.Context, for the Boost.Coroutine2 side of bench_generator only (coral does not use it).
if [[ "${1:-}" == "--bench" ]]; then
  dpkg -s libboost-context1.81-dev >/dev/null 2>&1 || missing+=(libboost-context1.81-dev)
fi
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
