#!/usr/bin/env bash
# Configures and builds WombatKV into ./build (or $WOMBATKV_BUILD_DIR). Extra arguments go to
# CMake's configure step, e.g. -DWOMBATKV_ASAN=ON.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WOMBATKV_BUILD_DIR:-$root/build}"
jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
cmake --build "$build" -j"$jobs"
