#!/usr/bin/env bash
# The test command: installs what the build and tests need, builds, and runs every test.
# Usage: scripts/test.sh [ctest arguments...]   (run as root on a fresh Debian 12 machine)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${WOMBATKV_BUILD_DIR:-$root/build}"
# A real S3 server on loopback for the S3 tests (docs/s3.md): radosgw, else moto; stopped on exit.
trap '"$root/scripts/s3-server.sh" stop >/dev/null 2>&1 || true' EXIT
eval "$("$root/scripts/s3-server.sh" start radosgw || "$root/scripts/s3-server.sh" start moto)"
cd "$build"
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 600 "$@"
"$root/scripts/fuzz.sh" 10
