#!/usr/bin/env bash
# The test command: installs what the build and tests need, builds, and runs every test.
# Usage: scripts/test.sh [ctest arguments...]   (run as root on a fresh Debian 12 machine)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${WOMBATKV_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 600 "$@"
