#!/usr/bin/env bash
# disk_full_test.sh WOMBATKV_BIN WOMBATKVD_BIN — a data directory whose disk fills up, with the
# real binaries: an 80 MiB tmpfs of the test's own (a private mount namespace, unshare(1), so
# nothing outlives the test). The embedded CLI and wombatkvd store 4 MB blocks until the disk is
# full; a put then fails with exit 5 naming the full device and what to do, and what was stored
# reads back. The daemon keeps serving with no byte free; once its journal's own write is refused
# it answers that a restart is needed and /healthz turns 503; it stops with exit 0 (RocksDB's
# own log writer asserted on its next line after a failed write: wombatkvd died with SIGABRT
# closing its store on a full disk), and after a restart with space freed every save it
# acknowledged reads back byte for byte and new ones succeed.
#
# Needs root (a mount namespace); as another user it prints "skip" and exits 77 (ctest: skipped).
# Prints one line per check and "N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -u

if (($# != 2)); then
  echo "usage: $0 WOMBATKV_BIN WOMBATKVD_BIN" >&2
  exit 2
fi
WKV=$1
WKVD=$2

if [[ ${WOMBATKV_DISK_FULL_INSIDE:-} != 1 ]]; then
  if [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null; then
    echo "skip  disk full checks (they mount a small tmpfs: need root and unshare(1))"
    exit 77
  fi
  exec env WOMBATKV_DISK_FULL_INSIDE=1 unshare --mount --propagation private -- \
    bash "${BASH_SOURCE[0]}" "$@"
fi

# shellcheck source=tests/tools/cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
cli_test_setup disk-full "$WKV" "$WKVD"
FULL=$TMP/full
mkdir -p "$FULL"
if ! mount -t tmpfs -o size=80m tmpfs "$FULL"; then
  fail "mount an 80 MiB tmpfs in the test's mount namespace"
  cli_test_summary
  exit
fi
trap 'umount "$FULL" 2>/dev/null; cli_test_cleanup' EXIT

key() { printf '%064x' "$1"; }
block() { head -c 4000000 /dev/urandom >"$TMP/b$1"; }  # distinct bytes: no deduplication

# put_until_full LABEL CMD...: puts blocks 1, 2, ... with CMD until one fails (at most 40).
# Sets LAST (the first block that failed) and checks how it failed.
put_until_full() {
  local label=$1 i
  shift
  for ((i = FIRST; i < FIRST + 40; i++)); do
    block "$i"
    run "$@" put "$(key "$i")" --file "$TMP/b$i" --publish
    ((RC == 0)) || break
  done
  LAST=$i
  if ((RC == 0)); then
    fail "$label: the disk fills up" "40 blocks of 4 MB fitted in 80 MiB"
  elif ((RC == 134 || RC > 128)); then
    fail "$label: a put on a full disk fails without dying" "exit $RC (signal $((RC - 128)))"
  else
    check_rc "$label: a put on a full disk fails with exit 5, naming the full device" 5 \
      "No space left on device"
    if grep -qF "free space" "$TMP/err"; then pass "$label: ... and saying what to do"
    else fail "$label: ... and saying what to do"; fi
  fi
}

# A file whose deletion frees room later.
head -c 12000000 /dev/zero >"$FULL/filler"

# ---- the embedded store (the CLI opens it for each command) ------------------------------------
export WMBT_KV_DATA_DIR=$FULL/data
FIRST=1
put_until_full "embedded" "$WKV"
STORED=$((LAST - 1))
for ((i = LAST + 1; i < LAST + 3; i++)); do
  block "$i"
  run "$WKV" put "$(key "$i")" --file "$TMP/b$i" --publish
  if ((RC > 128)); then fail "embedded: another put on the full disk does not die" "exit $RC"; fi
done
# Not a byte left: the commands that only read still run (they read beside the journal, which
# taking over would recover, which writes); one that writes says why it cannot.
dd if=/dev/zero of="$FULL/pad" bs=64k 2>/dev/null
run "$WKV" --json du
check_json "embedded: du runs on a disk with no byte free" "$TMP/out" \
  "(d['total']['l2']['blobs'], d['l1_checked'])" "($STORED, False)"
run "$WKV" audit
check_out "embedded: so does audit, and finds nothing wrong" 0 "result: clean"
run "$WKV" gc
check_rc "embedded: gc, which writes, exits 5 naming the full device" 5 "No space left on device"
rm -f "$FULL/filler" "$FULL/pad"
if ((STORED > 0)); then
  run "$WKV" get "$(key 1)" --out "$TMP/got1"
  if [[ $RC == 0 ]] && cmp -s "$TMP/b1" "$TMP/got1/$(key 1).bin"; then
    pass "embedded: a block stored before the disk filled reads back byte for byte"
  else
    fail "embedded: a block stored before the disk filled reads back byte for byte" "rc=$RC"
  fi
fi
block 100
run "$WKV" put "$(key 100)" --file "$TMP/b100" --publish
check_rc "embedded: with space freed, a put succeeds again" 0
run "$WKV" audit
check_rc "embedded: the audit of the data directory finds nothing wrong" 0

# ---- wombatkvd (the store stays open while the disk fills and empties) ------------------------
rm -rf "$FULL/data"

# start_daemon: wombatkvd on $FULL/daemon; sets ADDR ("" if it did not come up) and HOLDER_PID.
start_daemon() {
  "$WKVD" --data-dir "$FULL/daemon" --tcp 127.0.0.1:0 --http 127.0.0.1:0 --cache-bytes 16M \
    >"$TMP/daemon.out" 2>"$TMP/daemon.err" &
  HOLDER_PID=$!
  await_ready "$TMP/daemon.out"
  ADDR=$(sed -n 's|.*listening on tcp://\([^ ]*\).*|\1|p' "$TMP/daemon.out" | head -n 1)
  HTTP=$(sed -n 's|.*http on \(http://[^ ]*\).*|\1|p' "$TMP/daemon.out" | head -n 1)
}
# healthz: the daemon's /healthz status code, its body in $TMP/healthz.
healthz() { curl -s -o "$TMP/healthz" -w '%{http_code}' "$HTTP/healthz"; }
# Started on the empty disk, so that RocksDB's write-ahead log gets its preallocated space and
# the journal of the local L2 is what the full disk refuses first.
start_daemon
head -c 12000000 /dev/zero >"$FULL/filler"
if [[ -z $ADDR ]]; then
  fail "wombatkvd starts on the small disk" "$(head -c 600 "$TMP/daemon.err")"
else
  TCP=("$WKV" --tcp-addr "$ADDR")
  FIRST=200
  put_until_full "daemon" "${TCP[@]}"
  ACKED=()
  for ((i = FIRST; i < LAST; i++)); do ACKED+=("$i"); done
  # Not a byte left: small saves still fit the journal's zero-filled space (or fail cleanly).
  dd if=/dev/zero of="$FULL/pad" bs=64k 2>/dev/null
  died=0
  for i in $(seq 400 419); do
    printf 'small block %s' "$i" >"$TMP/b$i"
    run "${TCP[@]}" put "$(key "$i")" --file "$TMP/b$i" --publish
    ((RC == 0)) && ACKED+=("$i")
    ((RC > 128)) && died=1
  done
  if ((died == 0)) && kill -0 "$HOLDER_PID" 2>/dev/null; then
    pass "daemon: it keeps serving on a disk with no byte free (${#ACKED[@]} saves acknowledged)"
  else
    fail "daemon: it keeps serving on a disk with no byte free" "$(tail -c 600 "$TMP/daemon.err")"
  fi
  if [[ $(healthz) == 200 ]]; then pass "daemon: /healthz is 200 while its journal writes"
  else fail "daemon: /healthz is 200 while its journal writes" "$(cat "$TMP/healthz")"; fi
  # Blocks packed into the journal, until its zero-filled space runs out: its write fails, and
  # the journal stops (what reached the disk is unknown) until a restart.
  for i in $(seq 500 539); do
    head -c 200000 /dev/urandom >"$TMP/b$i"
    run "${TCP[@]}" put "$(key "$i")" --file "$TMP/b$i" --publish
    ((RC == 0)) && ACKED+=("$i")
    ((RC > 128)) && died=1
    ((RC != 0)) && break
  done
  check_rc "daemon: a journal write refused by the full disk says to restart" 5 \
    "restart the store to recover"
  if [[ $(healthz) == 503 ]] && grep -qF "restarts on a disk with free space" "$TMP/healthz"; then
    pass "daemon: /healthz turns 503 saying a restart after freeing space is needed"
  else
    fail "daemon: /healthz turns 503 saying a restart after freeing space is needed" \
      "$(cat "$TMP/healthz")"
  fi
  if [[ $(grep -c "\[error\] L2 takes no more writes until the store is reopened" \
    "$TMP/daemon.err") == 1 ]]; then
    pass "daemon: it logs the moment its store stopped taking writes, once"
  else
    fail "daemon: it logs the moment its store stopped taking writes, once" \
      "$(head -c 600 "$TMP/daemon.err")"
  fi
  head -c 1000 /dev/urandom >"$TMP/small"
  run "${TCP[@]}" put "$(key 599)" --file "$TMP/small"
  check_rc "daemon: a put (not published) is refused at once while the journal is failed" 5 \
    "restart the store to recover"
  if curl -s "$HTTP/metrics" | grep -q "^wombatkv_healthy 0$"; then
    pass "daemon: /metrics has wombatkv_healthy 0"
  else
    fail "daemon: /metrics has wombatkv_healthy 0"
  fi
  run "${TCP[@]}" get "$(key 200)" --out "$TMP/got200"
  if [[ $RC == 0 ]] && cmp -s "$TMP/b200" "$TMP/got200/$(key 200).bin"; then
    pass "daemon: a block stored before the disk filled reads back on the full disk"
  else
    fail "daemon: a block stored before the disk filled reads back on the full disk" "rc=$RC"
  fi
  # Its store closes on the full disk (RocksDB's flush fails there, and logs that it did).
  stop_daemon "daemon: SIGTERM stops it with exit 0 on the full disk"

  rm -f "$FULL/filler" "$FULL/pad"
  start_daemon
  if [[ -z $ADDR ]]; then
    fail "wombatkvd restarts once space is freed" "$(head -c 600 "$TMP/daemon.err")"
  else
    TCP=("$WKV" --tcp-addr "$ADDR")
    bad=""
    for i in "${ACKED[@]}"; do
      run "${TCP[@]}" get "$(key "$i")" --out "$TMP/got$i"
      [[ $RC == 0 ]] && cmp -s "$TMP/b$i" "$TMP/got$i/$(key "$i").bin" || bad+=" $i"
    done
    if [[ -z $bad ]]; then
      pass "daemon: after the restart every acknowledged save reads back byte for byte"
    else
      fail "daemon: after the restart every acknowledged save reads back byte for byte" \
        "missing or wrong:$bad"
    fi
    block 300
    run "${TCP[@]}" put "$(key 300)" --file "$TMP/b300" --publish
    check_rc "daemon: with space freed, a put succeeds again" 0
    if [[ $(healthz) == 200 ]]; then pass "daemon: after the restart /healthz is 200 again"
    else fail "daemon: after the restart /healthz is 200 again" "$(cat "$TMP/healthz")"; fi
    stop_daemon "daemon: SIGTERM stops it with exit 0 after the full disk"
  fi
fi

cli_test_summary
