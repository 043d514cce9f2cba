#!/usr/bin/env bash
# Builds coral and runs its tests against the Boost.Asio and Beast of another Boost release, on a
# system that has only Debian's Boost 1.81: the libraries named below are taken, headers only, at
# the commits the Boost release's tag records for them, and their include directory is placed
# before the system's (an overlay). The rest of Boost (Config, System, Test, ...) stays 1.81.
#
#   bash scripts/boost_overlay.sh 1.87.0            # overlay, build (Release), every test
#   bash scripts/boost_overlay.sh 1.87.0 --no-tests # overlay and build only
#   bash scripts/boost_overlay.sh 1.87.0 --headers  # overlay only (build/boost-1.87.0/include),
#                                                   # for a build of your own with -I<that dir>
#
# Needs git and network access to GitHub (or CORAL_BOOST_GIT: where the boostorg repositories
# are, either a URL prefix such as https://github.com/boostorg, or a pattern with %s for the
# repository name, such as /srv/mirrors/boostorg+%s.git). Results land in build/boost-<version>/.
# CORAL_BOOST_LIBS changes the libraries overlaid (default: asio beast core; Beast 1.90 needs
# Boost.Core 1.90, and Core of any release builds with 1.81's other libraries).
# CORAL_BUILD_TYPE picks the CMake build type (default Release; Debug compiles about twice as
# fast, for a check of every test against several releases on a small machine).
# docs/platforms.md lists what was checked this way.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: boost_overlay.sh <boost version, e.g. 1.87.0> [--no-tests | --headers]}
mode=${2:-}
source=${CORAL_BOOST_GIT:-https://github.com/boostorg}
libs=${CORAL_BOOST_LIBS:-asio beast core}
jobs=${CORAL_JOBS:-2}
build_type=${CORAL_BUILD_TYPE:-Release}

work=$PWD/build/boost-$version
cache=$PWD/build/boost-git
mkdir -p "$cache"

repo_url() {
  if [[ "$source" == *%s* ]]; then
    # shellcheck disable=SC2059
    printf "$source" "$1"
  else
    printf '%s/%s.git' "$source" "$1"
  fi
}

# A bare clone per repository, kept for the next version; fetched again when the tag is missing.
repo() {
  local dir=$cache/$1.git
  if [[ ! -d "$dir" ]]; then
    local url filter=(--filter=blob:none)
    url=$(repo_url "$1")
    # (A local mirror is cloned whole: a partial clone of it cannot fetch the missing blobs later.)
    [[ "$url" == /* ]] && filter=()
    git clone --quiet --bare "${filter[@]}" "$url" "$dir"
  fi
  echo "$dir"
}

superproject=$(repo boost)
tag=boost-$version
if ! git --git-dir="$superproject" rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
  git --git-dir="$superproject" fetch --quiet --tags
fi

rm -rf "$work/include"
mkdir -p "$work/include"
for lib in $libs; do
  # The release's commit of the library: the superproject's submodule entry at the release tag.
  commit=$(git --git-dir="$superproject" ls-tree "$tag" "libs/$lib" | awk '{print $3}')
  [[ -n "$commit" ]] || { echo "boost $version has no libs/$lib" >&2; exit 1; }
  dir=$(repo "$lib")
  git --git-dir="$dir" cat-file -e "$commit" 2>/dev/null || git --git-dir="$dir" fetch --quiet origin "$commit"
  echo "boost $version: $lib at $commit"
  git --git-dir="$dir" archive "$commit" include | tar -x -C "$work"
done
grep -h 'define BOOST_ASIO_VERSION ' "$work/include/boost/asio/version.hpp"
[[ "$mode" == "--headers" ]] && exit 0

# -I in the compiler flags comes before every include directory of the targets, and the system's
# /usr/include is searched last: the overlay wins for the headers it has.
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE="$build_type" "-DCMAKE_CXX_FLAGS=-I$work/include" >/dev/null
cmake --build "$work/build" -j"$jobs"
if [[ "$mode" != "--no-tests" ]]; then
  (cd "$work/build" && ctest --output-on-failure -j"$jobs")
fi
