#!/usr/bin/env bash
# The main job: installs what the build needs, builds, and runs the engine-like workload against
# the embedded store (data directory $WMBT_KV_DATA_DIR or ~/.wombatkv; no server needed).
# Run it twice: the second run restores what the first stored. Extra arguments go to
# wombatkv-workload (see `build/tools/wombatkv-workload --help`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"  # the same build as scripts/test.sh: neither undoes the other
build="${WOMBATKV_BUILD_DIR:-$root/build}"
exec "$build/tools/wombatkv-workload" "$@"
