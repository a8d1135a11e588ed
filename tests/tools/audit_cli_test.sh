#!/usr/bin/env bash
# audit_cli_test.sh WOMBATKV_BIN — drives `wombatkv audit`, `du` and `gc` on a temporary data
# directory: --help, a clean audit, exact du numbers, orphan GC (dry run, grace, deletion),
# planted violations found (exit 4, --json kinds), --repair fixing the repairable ones, a clean
# audit after the rest is put right, and the behaviour on a data directory another process owns.
#
# Prints one line per check and "N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -u

if (($# != 1)); then
  echo "usage: $0 WOMBATKV_BIN" >&2
  exit 2
fi
WKV=$1
if [[ ! -x $WKV ]]; then
  echo "audit_cli_test: $WKV is not an executable" >&2
  exit 2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/wombatkv-audit-test.XXXXXX")
HOLDER_PID=""
cleanup() {
  if [[ -n $HOLDER_PID ]]; then kill "$HOLDER_PID" 2>/dev/null; wait "$HOLDER_PID" 2>/dev/null; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

while IFS='=' read -r name _; do
  [[ $name == WMBT_KV_* || $name == AWS_* ]] && unset "$name"
done < <(env)
export WMBT_KV_DATA_DIR=$TMP/data
L2=$WMBT_KV_DATA_DIR/l2/kv/default/wombatkv/v1

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok    $1"; }
fail() {
  FAILED=$((FAILED + 1))
  echo "FAIL  $1"
  shift
  local line
  for line in "$@"; do echo "        $line"; done
  if [[ -s $TMP/err ]]; then echo "        stderr: $(head -c 600 "$TMP/err")"; fi
}
run() {
  "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
}
check_rc() {
  local name=$1 want=$2 needle=${3:-}
  if [[ $RC != "$want" ]]; then
    fail "$name" "exit code $RC, want $want" "stdout: $(head -c 600 "$TMP/out")"
  elif [[ -n $needle ]] && ! grep -qF -- "$needle" "$TMP/out" "$TMP/err"; then
    fail "$name" "output does not mention \"$needle\""
  else
    pass "$name"
  fi
}
# check_json NAME EXPR WANT: stdout is one JSON document and EXPR over it (`d`) prints WANT.
check_json() {
  local name=$1 expr=$2 want=$3 got
  if ! got=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' \
    "$expr" <"$TMP/out" 2>"$TMP/json_err"); then
    fail "$name" "not JSON (or $expr failed): $(head -c 300 "$TMP/out") $(head -c 300 "$TMP/json_err")"
  elif [[ $got != "$want" ]]; then
    fail "$name" "$expr = $got, want $want"
  else
    pass "$name"
  fi
}

# ---- --help ---------------------------------------------------------------------------------

for spec in "audit --quick --repair --grace stray_key l1_stale" "du L1 fingerprint -n" \
  "gc --grace --dry-run"; do
  read -r cmd needles <<<"$spec"
  run "$WKV" "$cmd" --help
  missing=()
  for n in $needles "Examples:" "Exit codes"; do grep -qF -- "$n" "$TMP/out" || missing+=("$n"); done
  if [[ $RC == 0 && ${#missing[@]} == 0 ]]; then pass "$cmd --help exits 0 and documents itself"
  else fail "$cmd --help exits 0 and documents itself" "rc=$RC missing: ${missing[*]}"; fi
done
run "$WKV" --help
check_rc "wombatkv --help lists audit, du and gc" 0 "orphan"

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
check_rc "audit of a store as written exits 0" 0 "result: clean"
run "$WKV" --json audit
check_json "audit --json: clean, no violations, L1 checked, 5 blobs verified" \
  "(d['clean'], d['violations'], d['l1_checked'], d['blobs_verified'])" "(True, [], True, 5)"
run "$WKV" --json audit --quick
check_json "audit --quick reads no blob" "(d['clean'], d['blobs_verified'])" "(True, 0)"

run "$WKV" --json du
# Heads: 76 + len("default") + 56 per entry; blobs: 48 + payload; sidecar: 48 + 500.
check_json "du: exact L2 bytes per plane" \
  "(d['total']['l2']['heads'], d['total']['l2']['head_bytes'], d['total']['l2']['blobs'], d['total']['l2']['blob_bytes'], d['total']['l2']['payload_bytes'], d['total']['l2']['sidecar_bytes'])" \
  "(2, $((83 + 168 + 83 + 112)), 5, $((10608 + 5 * 48)), 10608, 548)"
check_json "du: L1 records and the blocks they index" \
  "(d['total']['l1']['heads'], d['total']['l1']['blocks'], d['l1_checked'])" "(2, 5, True)"
check_json "du: a namespace row then one fingerprint row" \
  "[(r['namespace'], r['fingerprint']) for r in d['rows']]" \
  "[('default', None), ('default', '000000000000000000000000')]"
run "$WKV" du
check_rc "du prints a table" 0 "SIDECAR_BYTES"

# ---- orphans and gc -------------------------------------------------------------------------

K9=$(printf '9%.0s' $(seq 64))
run "$WKV" put "$K9" --value "$(head -c 700 /dev/zero | tr '\0' o)"
ORPHAN=$L2/blob/$(cat "$TMP/out")
run "$WKV" --json audit
check_json "an unpublished put is an orphan, not a violation" \
  "(d['clean'], d['orphans']['count'], d['orphans']['bytes'], d['orphans']['expired'])" \
  "(True, 1, 748, 0)"
run "$WKV" --json gc --dry-run --grace 0s
check_json "gc --dry-run lists the orphan" "(len(d['would_delete']), d['deleted'])" "(1, 0)"
[[ -f $ORPHAN ]] && pass "gc --dry-run deletes nothing" || fail "gc --dry-run deletes nothing"
run "$WKV" --json gc
check_json "gc with the default grace (1h) keeps a young orphan" "(d['expired'], d['deleted'])" \
  "(0, 0)"
run "$WKV" --json gc --grace 0
check_json "gc --grace 0 deletes it and counts the bytes" \
  "(d['deleted'], d['freed_bytes'], d['delete_failures'])" "(1, 748, 0)"
[[ ! -e $ORPHAN ]] && pass "the orphan's file is gone" || fail "the orphan's file is gone"
run "$WKV" gc --grace soon
check_rc "a bad --grace is a usage error" 2 "--grace"
run "$WKV" --json audit
check_json "the published chains are untouched by gc" "(d['clean'], d['total']['l2']['blobs'])" \
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
check_rc "audit with planted violations exits 4" 4 "violation(s) found"
run "$WKV" --json audit
check_json "audit --json names each planted violation" \
  "[d['violation_counts'][k] for k in ('head_unreadable', 'l1_stale', 'blob_missing', 'stray_key')]" \
  "[1, 1, 1, 1]"
check_json "audit --json marks what --repair can fix" \
  "sorted((v['kind'], v['repairable']) for v in d['violations'])" \
  "[('blob_missing', False), ('head_unreadable', True), ('l1_stale', True), ('stray_key', False)]"

run "$WKV" --json audit --repair
check_json "audit --repair deletes the unreadable head and rebuilds L1" \
  "(sorted(a['action'] for a in d['repair']['actions']), d['repair']['l1_rebuilt'], d['remaining_violations'])" \
  "(['delete_head', 'rebuild_l1'], True, 2)"
[[ ! -e $HEAD_A ]] && pass "the unreadable head is gone" || fail "the unreadable head is gone"
[[ -e $L2/notes.txt ]] && pass "a stray key is left alone" || fail "a stray key is left alone"
run "$WKV" audit --repair
check_rc "audit --repair exits 4 while unrepairable violations remain" 4 "remain"

# Put right what repair cannot: the stray goes, the missing block is put again.
rm -f "$L2/notes.txt"
run "$WKV" put-chain --dir "$TMP/b"
run "$WKV" audit
check_rc "after that the audit is clean" 0 "result: clean"

# ---- a data directory another process owns --------------------------------------------------

if command -v flock >/dev/null; then
  mkfifo "$TMP/ready"
  (
    exec 9>>"$WMBT_KV_DATA_DIR/LOCK"
    flock -x -n 9 && echo ready && exec sleep 300
  ) >"$TMP/ready" &
  HOLDER_PID=$!
  read -r state <"$TMP/ready"
  if [[ $state == ready ]]; then
    run "$WKV" audit
    check_rc "audit of an owned data directory checks L2 only and says so" 0 "L1 not checked"
    run "$WKV" --json audit
    check_json "audit --json reports l1_checked false" "(d['l1_checked'], d['clean'])" \
      "(False, True)"
    run "$WKV" --json gc --grace 0
    check_json "gc runs while another process owns the data directory" "d['delete_failures']" "0"
    run "$WKV" --json du
    check_json "du shows L2 only" "(d['l1_checked'], d['total']['l2']['blobs'] > 0)" \
      "(False, True)"
  else
    fail "could not take the data directory lock with flock(1)"
  fi
  kill "$HOLDER_PID" 2>/dev/null
  wait "$HOLDER_PID" 2>/dev/null
  HOLDER_PID=""
else
  echo "skip  owned data directory (flock(1) not installed)"
fi

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
