#!/usr/bin/env bash
# audit_cli_test.sh WOMBATKV_BIN — drives `wombatkv audit`, `du` and `gc` on a temporary data
# directory: --help, a clean audit, exact du numbers, orphan GC (dry run, grace, deletion),
# planted violations found (exit 4, --json kinds), --repair fixing the repairable ones, a clean
# audit after the rest is put right, the behaviour on a data directory another process owns, and
# packed objects (read, verified, collected).
#
# Prints one line per check and "N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -u

if (($# != 1)); then
  echo "usage: $0 WOMBATKV_BIN" >&2
  exit 2
fi
WKV=$1
# shellcheck source=tests/tools/cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
cli_test_setup audit-test "$WKV"
L2=$WMBT_KV_DATA_DIR/l2/kv/default/wombatkv/v1
# Most checks below plant and inspect L2 objects as files: every object gets one. Packed objects
# (the default for small ones) have a section of their own at the end.
export WMBT_KV_L2_PACKED_BYTES=0

# ---- --help ---------------------------------------------------------------------------------

help_case audit --quick --repair --grace stray_key l1_stale
help_case du L1 fingerprint -n
help_case gc --grace --dry-run WMBT_KV_S3_LIST_LAG
run "$WKV" --help
check_out "wombatkv --help lists audit, du and gc" 0 "orphan"

# ---- a store as written: clean, measured exactly --------------------------------------------

mkdir -p "$TMP/a" "$TMP/b"
head -c 1000 /dev/urandom >"$TMP/a/0"
head -c 2000 /dev/urandom >"$TMP/a/1"
head -c 3000 /dev/urandom >"$TMP/a/2"
head -c 4096 /dev/urandom >"$TMP/b/0"
head -c 512 /dev/urandom >"$TMP/b/1"
run "$WKV" --json put-chain --dir "$TMP/a"
TIP_A=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tip"])' <"$TMP/out")
run "$WKV" --json put-chain --dir "$TMP/b"
check_rc "two chains put" 0
run "$WKV" sidecar put "$TIP_A" --value "$(head -c 500 /dev/zero | tr '\0' s)"

run "$WKV" audit
check_out "audit of a store as written exits 0" 0 "result: clean"
run "$WKV" --json audit
check_json "audit --json: clean, no violations, L1 checked, 5 blobs verified" "$TMP/out" \
  "(d['clean'], d['violations'], d['l1_checked'], d['blobs_verified'])" "(True, [], True, 5)"
run "$WKV" --json audit --quick
check_json "audit --quick reads no blob" "$TMP/out" "(d['clean'], d['blobs_verified'])" "(True, 0)"

run "$WKV" --json du
# Heads: 76 + len("default") + 56 per entry; blobs: 48 + payload; sidecar: 48 + 500.
check_json "du: exact L2 bytes per plane" "$TMP/out" \
  "(d['total']['l2']['heads'], d['total']['l2']['head_bytes'], d['total']['l2']['blobs'], d['total']['l2']['blob_bytes'], d['total']['l2']['payload_bytes'], d['total']['l2']['sidecar_bytes'])" \
  "(2, $((83 + 168 + 83 + 112)), 5, $((10608 + 5 * 48)), 10608, 548)"
check_json "du: L1 records and the blocks they index" "$TMP/out" \
  "(d['total']['l1']['heads'], d['total']['l1']['blocks'], d['l1_checked'])" "(2, 5, True)"
check_json "du: a namespace row then one fingerprint row" "$TMP/out" \
  "[(r['namespace'], r['fingerprint']) for r in d['rows']]" \
  "[('default', None), ('default', '000000000000000000000000')]"
run "$WKV" du
check_out "du prints a table" 0 "SIDECAR_BYTES"

# ---- orphans and gc -------------------------------------------------------------------------

K9=$(printf '9%.0s' $(seq 64))
run "$WKV" put "$K9" --value "$(head -c 700 /dev/zero | tr '\0' o)"
ORPHAN=$L2/blob/$(cat "$TMP/out")
run "$WKV" --json audit
check_json "an unpublished put is an orphan, not a violation" "$TMP/out" \
  "(d['clean'], d['orphans']['count'], d['orphans']['bytes'], d['orphans']['expired'])" \
  "(True, 1, 748, 0)"
run "$WKV" --json gc --dry-run --grace 0s
check_json "gc --dry-run lists the orphan" "$TMP/out" \
  "(len(d['would_delete']), d['deleted'])" "(1, 0)"
[[ -f $ORPHAN ]] && pass "gc --dry-run deletes nothing" || fail "gc --dry-run deletes nothing"
run "$WKV" --json gc
check_json "gc with the default grace (1h) keeps a young orphan" "$TMP/out" \
  "(d['expired'], d['deleted'])" \
  "(0, 0)"
run "$WKV" gc --grace 5
check_rc "gc --grace without a unit exits 2 (no guess at what it deletes)" 2 "a number needs its unit"
run "$WKV" --json gc --grace 0
check_json "gc --grace 0 deletes it and counts the bytes" "$TMP/out" \
  "(d['deleted'], d['freed_bytes'], d['delete_failures'])" "(1, 748, 0)"
check_json "gc on the local directory waits for no listing lag unless told" "$TMP/out" \
  "d['list_lag_waited_ms']" "0"
[[ ! -e $ORPHAN ]] && pass "the orphan's file is gone" || fail "the orphan's file is gone"
# The bytes it deleted were kept in gc-held-cli/ until the re-check (docs/layout.md §7), then let go.
HELD=$WMBT_KV_DATA_DIR/gc-held-cli
if [[ -d $HELD ]] && ! compgen -G "$HELD/held-*" >/dev/null; then
  pass "gc leaves no hold file once its re-check is done"
else
  fail "gc leaves no hold file once its re-check is done"
fi
# Two collecting commands at once would share that directory: the second is refused.
run "$WKV" put "$K9" --value "$(head -c 700 /dev/zero | tr '\0' h)"
flock -o "$HELD/LOCK" sleep 30 &  # -o: flock holds it, not its sleep: killing flock frees it
HOLDER=$!
for _ in $(seq 100); do flock -n "$HELD/LOCK" true || break; sleep 0.05; done
run "$WKV" gc --grace 0
check_rc "a second collecting command is refused (exit 5)" 5 "another command is collecting orphans"
run "$WKV" gc --dry-run --grace 0
check_out "gc --dry-run keeps no bytes and needs no lock" 0 "would delete 1 orphans"
pkill -P "$HOLDER" sleep 2>/dev/null
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
run "$WKV" --json gc --grace 0
check_json "once it ended, gc runs" "$TMP/out" "d['deleted']" "1"

# WMBT_KV_S3_LIST_LAG: the listing of the heads before deleting, and the re-check after, each wait
# out a lagging listing (gc/orphan_gc.h R3), in gc and in audit --repair alike; a bad value stops
# the CLI naming the variable.
run "$WKV" put "$K9" --value "$(head -c 700 /dev/zero | tr '\0' l)"
run env WMBT_KV_S3_LIST_LAG=1500ms "$WKV" --json gc --grace 0
check_json "gc waits WMBT_KV_S3_LIST_LAG before its deletes and before its re-check" "$TMP/out" \
  "(d['deleted'], d['list_lag_waited_ms'])" "(1, 3000)"
run "$WKV" put "$K9" --value "$(head -c 700 /dev/zero | tr '\0' m)"
run env WMBT_KV_S3_LIST_LAG=1s "$WKV" gc --grace 0
check_rc "gc says why it waits" 0 "waiting 1s (WMBT_KV_S3_LIST_LAG) for S3 listings"
run "$WKV" put "$K9" --value "$(head -c 700 /dev/zero | tr '\0' r)"
run env WMBT_KV_S3_LIST_LAG=1s "$WKV" --json audit --repair --grace 0
check_json "audit --repair's orphan GC waits WMBT_KV_S3_LIST_LAG too" "$TMP/out" \
  "(d['repair']['gc']['deleted'], d['repair']['gc']['list_lag_waited_ms'])" "(1, 2000)"
run env WMBT_KV_S3_LIST_LAG=soon "$WKV" gc --grace 0
check_rc "a bad WMBT_KV_S3_LIST_LAG is a usage error naming it" 2 "WMBT_KV_S3_LIST_LAG"
run "$WKV" gc --grace soon
check_rc "a bad --grace is a usage error" 2 "--grace"
run "$WKV" --json audit
check_json "the published chains are untouched by gc" "$TMP/out" \
  "(d['clean'], d['total']['l2']['blobs'])" \
  "(True, 5)"

# ---- planted violations ---------------------------------------------------------------------

HEAD_A=$L2/chain/000000000000000000000000/$TIP_A
printf 'XX' | dd of="$HEAD_A" bs=1 seek=90 conv=notrunc 2>/dev/null
BLOB_B=$(ls "$L2/blob" | while read -r h; do
  if cmp -s <(tail -c +49 "$L2/blob/$h") "$TMP/b/1"; then echo "$L2/blob/$h"; fi
done)
rm -f "$BLOB_B"
echo "not ours" >"$L2/notes.txt"
run "$WKV" audit
check_out "audit with planted violations exits 4" 4 "violation(s) found"
run "$WKV" --json audit
check_json "audit --json names each planted violation" "$TMP/out" \
  "[d['violation_counts'][k] for k in ('head_unreadable', 'l1_stale', 'blob_missing', 'stray_key')]" \
  "[1, 1, 1, 1]"
check_json "audit --json marks what --repair can fix" "$TMP/out" \
  "sorted((v['kind'], v['repairable']) for v in d['violations'])" \
  "[('blob_missing', False), ('head_unreadable', True), ('l1_stale', True), ('stray_key', False)]"

run "$WKV" --json audit --repair
check_json "audit --repair deletes the unreadable head and rebuilds L1" "$TMP/out" \
  "(sorted(a['action'] for a in d['repair']['actions']), d['repair']['l1_rebuilt'], d['remaining_violations'])" \
  "(['delete_head', 'rebuild_l1'], True, 2)"
[[ ! -e $HEAD_A ]] && pass "the unreadable head is gone" || fail "the unreadable head is gone"
[[ -e $L2/notes.txt ]] && pass "a stray key is left alone" || fail "a stray key is left alone"
run "$WKV" audit --repair
check_out "audit --repair exits 4 while unrepairable violations remain" 4 "remain"

# Put right what repair cannot: the stray goes, the missing block is put again.
rm -f "$L2/notes.txt"
run "$WKV" put-chain --dir "$TMP/b"
run "$WKV" audit
check_out "after that the audit is clean" 0 "result: clean"

# ---- a data directory another process owns --------------------------------------------------

if lock_data_dir; then
  run "$WKV" audit
  check_out "audit of an owned data directory checks L2 only and says so" 0 "L1 not checked"
  run "$WKV" --json audit
  check_json "audit --json reports l1_checked false" "$TMP/out" "(d['l1_checked'], d['clean'])" \
    "(False, True)"
  run "$WKV" --json gc --grace 0
  check_json "gc runs while another process owns the data directory" "$TMP/out" \
    "d['delete_failures']" "0"
  run "$WKV" --json du
  check_json "du shows L2 only" "$TMP/out" "(d['l1_checked'], d['total']['l2']['blobs'] > 0)" \
    "(False, True)"
  unlock_data_dir
fi

# ---- packed objects: in the journal, no file of their own ------------------------------------

export WMBT_KV_DATA_DIR=$TMP/packed
unset WMBT_KV_L2_PACKED_BYTES
PL2=$WMBT_KV_DATA_DIR/l2/kv/default/wombatkv/v1
run "$WKV" --json put-chain --dir "$TMP/a"
run "$WKV" put "$K9" --value "$(head -c 700 /dev/zero | tr '\0' p)"
PACKED_ORPHAN=$PL2/blob/$(cat "$TMP/out")
[[ ! -e $PACKED_ORPHAN ]] && pass "a small blob is packed: it has no file" ||
  fail "a small blob is packed: it has no file"
run "$WKV" --json audit
check_json "audit reads packed blobs: clean, 3 verified, the orphan found" "$TMP/out" \
  "(d['clean'], d['blobs_verified'], d['orphans']['count'], d['orphans']['bytes'])" \
  "(True, 3, 1, 748)"
run "$WKV" --json gc --grace 0
check_json "gc deletes a packed orphan when no store has the directory open" "$TMP/out" \
  "(d['deleted'], d['freed_bytes'], d['delete_failures'])" "(1, 748, 0)"
run "$WKV" --json audit
check_json "after gc: clean, no orphan, the chain's blobs all there" "$TMP/out" \
  "(d['clean'], d['orphans']['count'], d['total']['l2']['blobs'])" "(True, 0, 3)"

cli_test_summary
