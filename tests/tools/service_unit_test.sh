#!/usr/bin/env bash
# service_unit_test.sh UNIT WOMBATKVD_BIN WOMBATKV_BIN — the systemd unit of packaging/ as a host
# would run it: its directories and its engine line agree with its ExecStart, and that command
# line, with the host's paths, group and ports mapped to scratch ones, starts wombatkvd, serves a
# client of the group over shared memory and stops with exit 0 on SIGTERM. (systemd itself is
# not needed: the unit's sandboxing is not exercised here.)
#
# Prints one line per check and "N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -u

if (($# != 3)); then
  echo "usage: $0 UNIT WOMBATKVD_BIN WOMBATKV_BIN" >&2
  exit 2
fi
UNIT=$1
WKVD=$2
WKV=$3
if [[ ! -r $UNIT ]]; then
  echo "service_unit_test: cannot read $UNIT" >&2
  exit 2
fi
# shellcheck source=tests/tools/cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
cli_test_setup service-unit "$WKVD" "$WKV"

# The value of KEY= in the unit (the last one wins, as in systemd).
unit_value() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
# The value of flag FLAG in ExecStart ("" if absent).
flag_value() {
  local i
  for ((i = 1; i < ${#EXEC[@]}; i++)); do
    if [[ ${EXEC[i]} == "$1" ]]; then
      echo "${EXEC[i + 1]:-}"
      return
    fi
  done
}

read -r -a EXEC <<<"$(unit_value ExecStart)"
USER_NAME=$(unit_value User)
GROUP_NAME=$(unit_value Group)
DATA_DIR=$(flag_value --data-dir)
RUN_DIR=$(flag_value --run-dir)
PREFIX=$(flag_value --prefix)
SHM_GROUP=$(flag_value --shm-group)

if [[ ${EXEC[0]:-} == /*/wombatkvd ]]; then
  pass "ExecStart runs an installed wombatkvd (${EXEC[0]})"
else
  fail "ExecStart runs an installed wombatkvd" "ExecStart: ${EXEC[*]}"
fi
if [[ $DATA_DIR == "/var/lib/$(unit_value StateDirectory)" ]]; then
  pass "--data-dir is the unit's StateDirectory"
else fail "--data-dir is the unit's StateDirectory" "$DATA_DIR"; fi
NAME="--run-dir is the unit's RuntimeDirectory, writable by the daemon's user alone"
if [[ $RUN_DIR == "/run/$(unit_value RuntimeDirectory)" &&
  $(unit_value RuntimeDirectoryMode) == 0755 ]]; then
  pass "$NAME"
else
  fail "$NAME" "--run-dir $RUN_DIR, RuntimeDirectoryMode=$(unit_value RuntimeDirectoryMode)"
fi
if [[ -n $SHM_GROUP && $SHM_GROUP == "$GROUP_NAME" && -n $USER_NAME ]]; then
  pass "--shm-group is the daemon's own group ($GROUP_NAME)"
else
  fail "--shm-group is the daemon's own group" "--shm-group '$SHM_GROUP', Group '$GROUP_NAME'"
fi
ENGINE="WMBT_KV_REMOTE_PREFIX=$PREFIX WMBT_KV_RUN_DIR=$RUN_DIR WMBT_KV_SHM_GROUP=$SHM_GROUP"
if grep -qF -- "$ENGINE" "$UNIT"; then pass "the unit's engine settings match its ExecStart"
else fail "the unit's engine settings match its ExecStart" "expected: $ENGINE"; fi

# The host's values → scratch ones: each must be in ExecStart, so a changed unit is noticed.
MY_GROUP=$(id -gn)
declare -A MAP=(
  ["${EXEC[0]:-(no command)}"]=$WKVD
  ["${DATA_DIR:-(no --data-dir)}"]=$TMP/state
  ["${RUN_DIR:-(no --run-dir)}"]=$TMP/run
  ["${SHM_GROUP:-(no --shm-group)}"]=$MY_GROUP
  ["127.0.0.1:7070"]=127.0.0.1:0
  ["127.0.0.1:9090"]=127.0.0.1:0
)
ARGS=()
for word in "${EXEC[@]}"; do ARGS+=("${MAP[$word]:-$word}"); done
for from in "${!MAP[@]}"; do
  found=0
  for word in "${EXEC[@]}"; do [[ $word == "$from" ]] && found=1; done
  ((found)) || fail "ExecStart still holds '$from'" "it changed: update this test's map"
done
mkdir -p "$TMP/run"
chmod 0755 "$TMP/run"

"${ARGS[@]}" >"$TMP/daemon.out" 2>"$TMP/daemon.err" &
HOLDER_PID=$!
if await_ready "$TMP/daemon.out"; then
  pass "wombatkvd starts with the unit's flags"
  SOCK=$TMP/run/wombatkv-$PREFIX.sock
  if grep -qF "shared-memory clients on $SOCK" "$TMP/daemon.out" &&
    [[ $(stat -c '%a %G' "$SOCK") == "660 $MY_GROUP" ]]; then
    pass "its control socket is in the run directory, 0660 and the group's"
  else
    fail "its control socket is in the run directory, 0660 and the group's" \
      "$(stat -c '%a %G' "$SOCK" 2>&1)" "$(cat "$TMP/daemon.out")"
  fi
  run env WMBT_KV_RUN_DIR="$TMP/run" WMBT_KV_SHM_GROUP="$MY_GROUP" "$WKV" \
    --remote-prefix "$PREFIX" put "$(printf '7%.0s' $(seq 64))" --value "unit" --publish
  check_rc "an engine with the unit's settings saves over shared memory" 0
else
  fail "wombatkvd starts with the unit's flags" "$(head -c 600 "$TMP/daemon.err")"
fi
stop_daemon "SIGTERM (the unit's KillSignal) stops it with exit 0" "$TMP/daemon.out"
if [[ $(unit_value KillSignal) == SIGTERM ]]; then pass "the unit stops it with SIGTERM"
else fail "the unit stops it with SIGTERM" "KillSignal=$(unit_value KillSignal)"; fi

cli_test_summary
