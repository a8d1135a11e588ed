#!/usr/bin/env bash
# python_example_test.sh LIB [DAEMON_CTL...] — runs examples/python/restore_prefix.py (the ctypes
# binding an engine author would start from) against libwombatkv LIB, on a fresh embedded store,
# or, given daemon_ctl.sh's command line for a mode, through a wombatkvd it starts for the test.
# Fails when the example does: a restored byte differs, or a turn restores less than it stored.
set -euo pipefail
lib=$1
shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
ctl=("$@")
cleanup() {
  if ((${#ctl[@]})); then "${ctl[@]}" stop || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

args=(--data-dir "$tmp/data")
if ((${#ctl[@]})); then
  args=()
  while IFS= read -r setting; do args+=(--setting "$setting"); done < <("${ctl[@]}" start "$tmp/data")
  ((${#args[@]})) || { echo "python_example_test: the daemon printed no settings" >&2; exit 1; }
fi
WOMBATKV_LIB=$lib python3 "$repo/examples/python/restore_prefix.py" "${args[@]}"
