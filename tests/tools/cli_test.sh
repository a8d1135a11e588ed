#!/usr/bin/env bash
# cli_test.sh WOMBATKV_BIN WORKLOAD_BIN — drives the real `wombatkv` and `wombatkv-workload`
# binaries on a temporary data directory: the put/publish/lookup/get/cat/ls/inspect/sidecar round
# trip, --json output, the documented exit codes (miss 1, usage 2, conflict 3, locked 5), every
# --help, and a short workload run twice (the second run must restore what the first stored).
#
# Prints one line per check and "N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -u

if (($# != 2)); then
  echo "usage: $0 WOMBATKV_BIN WORKLOAD_BIN" >&2
  exit 2
fi
WKV=$1
WL=$2
for bin in "$WKV" "$WL"; do
  if [[ ! -x $bin ]]; then
    echo "cli_test: $bin is not an executable" >&2
    exit 2
  fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/wombatkv-cli-test.XXXXXX")
HOLDER_PID=""
cleanup() {
  if [[ -n $HOLDER_PID ]]; then kill "$HOLDER_PID" 2>/dev/null; wait "$HOLDER_PID" 2>/dev/null; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# A clean environment: only the data directory comes from the environment.
while IFS='=' read -r name _; do
  [[ $name == WMBT_KV_* || $name == AWS_* ]] && unset "$name"
done < <(env)
export WMBT_KV_DATA_DIR=$TMP/data

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

# run CMD...: runs with stdout in $TMP/out, stderr in $TMP/err, exit code in RC.
run() {
  "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
}
out() { cat "$TMP/out"; }
err() { cat "$TMP/err"; }

# check NAME WANT_RC [needle-in-stderr]: the last run's exit code (and stderr text).
check_rc() {
  local name=$1 want=$2 needle=${3:-}
  if [[ $RC != "$want" ]]; then
    fail "$name" "exit code $RC, want $want"
  elif [[ -n $needle ]] && ! grep -qF -- "$needle" "$TMP/err"; then
    fail "$name" "stderr does not mention \"$needle\""
  else
    pass "$name"
  fi
}

# json EXPR < file: evaluates a Python expression over the parsed JSON document `d`.
json() {
  python3 -c 'import json,sys; d=json.load(sys.stdin); r=eval(sys.argv[1]); print(r)' "$1"
}
# check_json NAME FILE EXPR WANT: the JSON in FILE parses and EXPR over it prints WANT.
check_json() {
  local name=$1 file=$2 expr=$3 want=$4 got
  if ! got=$(json "$expr" <"$file" 2>"$TMP/json_err"); then
    fail "$name" "not JSON (or $expr failed): $(head -c 300 "$file") $(head -c 300 "$TMP/json_err")"
  elif [[ $got != "$want" ]]; then
    fail "$name" "$expr = $got, want $want"
  else
    pass "$name"
  fi
}

key() { printf "%0.s$1" $(seq 64); }  # 64 copies of one hex digit
K1=$(key 1)
K2=$(key 2)
K3=$(key 3)
K9=$(key 9)

# ---- --help of every command ------------------------------------------------------------------

run "$WKV" --help
if [[ $RC == 0 ]] && grep -q "Exit codes" "$TMP/out" && grep -q "locked" "$TMP/out"; then
  pass "wombatkv --help exits 0 and documents the exit codes"
else
  fail "wombatkv --help exits 0 and documents the exit codes" "rc=$RC"
fi
help_case() {  # help_case "COMMAND WORDS" NEEDLE...
  local cmd=$1
  shift
  # shellcheck disable=SC2086
  run "$WKV" $cmd --help
  local missing=()
  local n
  for n in "$@" "Examples:" "Exit codes"; do
    grep -qF -- "$n" "$TMP/out" || missing+=("$n")
  done
  if [[ $RC == 0 && ${#missing[@]} == 0 ]]; then
    pass "$cmd --help exits 0 and mentions $*"
  else
    fail "$cmd --help exits 0 and mentions $*" "rc=$RC missing: ${missing[*]}"
  fi
}
help_case put KEY_HEX --parent --file --stdin --value --publish
help_case put-chain --file --dir --parent --chain-id --expect-version
help_case publish CHAIN_ID_HEX TIP_HEX --expect-version
help_case lookup KEY_HEX
help_case get KEY_HEX --out
help_case cat CONTENT_HASH_HEX
help_case ls --namespace
help_case stat
help_case inspect CHAIN_ID_HEX
help_case sidecar put get
help_case "sidecar put" TIP_HEX --file --stdin --value
help_case "sidecar get" TIP_HEX --out
help_case refresh
run "$WL" --help
if [[ $RC == 0 ]] && grep -qF -- "--conversations" "$TMP/out" &&
  grep -qF -- "--fresh" "$TMP/out"; then
  pass "wombatkv-workload --help exits 0 and mentions its flags"
else
  fail "wombatkv-workload --help exits 0 and mentions its flags" "rc=$RC"
fi

# ---- put / publish / lookup / get / cat ------------------------------------------------------

printf 'root block bytes' >"$TMP/b1"
head -c 5000 /dev/urandom >"$TMP/b2"

run "$WKV" put "$K1" --file "$TMP/b1" --publish
H1=$(out)
if [[ $RC == 0 && $H1 =~ ^[0-9a-f]{40}$ ]]; then
  pass "put --publish prints a 40-hex content hash"
else
  fail "put --publish prints a 40-hex content hash" "rc=$RC out=$H1"
fi
run "$WKV" put "$K2" --parent "$K1" --stdin --publish <"$TMP/b2"
H2=$(out)
check_rc "put --stdin --publish of a child block" 0

run "$WKV" lookup "$K1" "$K2" "$K3"
if [[ $RC == 0 && $(out) == 2 ]]; then pass "lookup prints the matched count (2 of 3)"
else fail "lookup prints the matched count (2 of 3)" "rc=$RC out=$(out)"; fi

run "$WKV" --json lookup "$K1" "$K2" "$K3"
check_json "lookup --json parses" "$TMP/out" "(d['keys'], d['matched'])" "(3, 2)"

run "$WKV" get "$K1" "$K2" --out "$TMP/restored"
if [[ $RC == 0 ]] && cmp -s "$TMP/b1" "$TMP/restored/$K1.bin" &&
  cmp -s "$TMP/b2" "$TMP/restored/$K2.bin"; then
  pass "get --out restores the exact bytes"
else
  fail "get --out restores the exact bytes" "rc=$RC"
fi

run "$WKV" --json get "$K1" "$K2"
check_json "get --json parses" "$TMP/out" "[b['bytes'] for b in d['blocks']]" "[16, 5000]"

run "$WKV" get "$K1" "$K3"
check_rc "get with a missing key exits 1 (all or nothing)" 1 "wombatkv: get:"
run "$WKV" --json get "$K3"
check_json "get miss with --json reports {\"error\":...} on stderr" "$TMP/err" \
  "(d['error']['code'], d['error']['exit'])" "('NOT_FOUND', 1)"

run "$WKV" cat "$H2"
if [[ $RC == 0 ]] && cmp -s "$TMP/b2" "$TMP/out"; then pass "cat writes the raw bytes"
else fail "cat writes the raw bytes" "rc=$RC"; fi
run "$WKV" --json cat "$H1"
check_json "cat --json parses (base64)" "$TMP/out" \
  "__import__('base64').b64decode(d['base64']).decode()" "root block bytes"
run "$WKV" cat "$(printf '0%.0s' $(seq 40))"
check_rc "cat of an unknown hash exits 1" 1

# A block put and never published is an orphan: readable by content hash, invisible to lookups.
run "$WKV" put "$K3" --parent "$K2" --value orphan
H3=$(out)
run "$WKV" cat "$H3"
if [[ $RC == 0 && $(out) == orphan ]]; then pass "cat reads an unpublished block by hash"
else fail "cat reads an unpublished block by hash" "rc=$RC"; fi
run "$WKV" lookup "$K1" "$K2" "$K3"
if [[ $RC == 0 && $(out) == 2 ]]; then pass "an unpublished block is invisible to lookup"
else fail "an unpublished block is invisible to lookup" "rc=$RC out=$(out)"; fi

# ---- publish and compare-and-swap ------------------------------------------------------------

run "$WKV" publish "$K2" "$K2"
V=$(out)
if [[ $RC == 0 && $V =~ ^[0-9]+$ ]]; then pass "publish prints the new version ($V)"
else fail "publish prints the new version" "rc=$RC out=$V"; fi
run "$WKV" publish "$K2" "$K2" --expect-version "$V"
V2=$(out)
if [[ $RC == 0 && $V2 == $((V + 1)) ]]; then pass "publish --expect-version CURRENT succeeds"
else fail "publish --expect-version CURRENT succeeds" "rc=$RC out=$V2"; fi
run "$WKV" publish "$K2" "$K2" --expect-version "$V"
check_rc "publish with a stale --expect-version exits 3 with the current version" 3 "version $V2"
if grep -qF "$K2" "$TMP/err"; then pass "the conflict line names the current tip"
else fail "the conflict line names the current tip"; fi
run "$WKV" --json publish "$K2" "$K2" --expect-version 0
check_json "conflict with --json carries the current state" "$TMP/err" \
  "(d['error']['code'], d['error']['exit'], d['error']['current']['version'])" \
  "('CONFLICT', 3, $V2)"
run "$WKV" --json publish "$K2" "$K2"
check_json "publish --json parses" "$TMP/out" "d['version']" "$((V2 + 1))"

# Put in one process, publish in a later one (a separate chain, so K2's stays as it is).
KA=$(key a)
run "$WKV" put "$K9" --value "later root"
run "$WKV" put "$KA" --parent "$K9" --value "later child"
run "$WKV" publish "$KA" "$KA"
check_rc "publish in a later process finds the blocks put by earlier ones" 0
run "$WKV" lookup "$K9" "$KA"
if [[ $RC == 0 && $(out) == 2 ]]; then pass "that chain is visible to lookup"
else fail "that chain is visible to lookup" "rc=$RC out=$(out)"; fi

# ---- ls / inspect ----------------------------------------------------------------------------

run "$WKV" ls
if [[ $RC == 0 ]] && grep -q "$K2" "$TMP/out" && grep -q "CHAIN_ID" "$TMP/out"; then
  pass "ls lists the published chain"
else
  fail "ls lists the published chain" "rc=$RC"
fi
run "$WKV" --json ls
check_json "ls --json parses" "$TMP/out" \
  "[(c['blocks'], c['bytes']) for c in d['chains'] if c['chain_id']=='$K2']" "[(2, 5016)]"
run "$WKV" ls --namespace nobody
if [[ $RC == 0 ]] && ! grep -q "$K2" "$TMP/out"; then pass "ls --namespace filters"
else fail "ls --namespace filters" "rc=$RC"; fi

run "$WKV" inspect "$K2"
if [[ $RC == 0 ]] && grep -q "$K1" "$TMP/out" && grep -q "$H2" "$TMP/out"; then
  pass "inspect shows the blocks root to tip with hashes"
else
  fail "inspect shows the blocks root to tip with hashes" "rc=$RC"
fi
run "$WKV" --json inspect "$K2"
check_json "inspect --json parses" "$TMP/out" \
  "[(b['key'][:4], b['content_hash'] == h, b['bytes'])
    for b, h in zip(d['blocks'], ['$H1', '$H2'])]" \
  "[('1111', True, 16), ('2222', True, 5000)]"
run "$WKV" inspect "$K3"
check_rc "inspect of an unpublished chain exits 1" 1

# ---- sidecars --------------------------------------------------------------------------------

run "$WKV" sidecar put "$K2" --value "raw tail"
check_rc "sidecar put" 0
run "$WKV" sidecar get "$K2"
if [[ $RC == 0 && $(out) == "raw tail" ]]; then pass "sidecar get returns the bytes"
else fail "sidecar get returns the bytes" "rc=$RC out=$(out)"; fi
run "$WKV" --json sidecar get "$K2"
check_json "sidecar get --json parses" "$TMP/out" "d['bytes']" "8"
run "$WKV" sidecar get "$K1"
check_rc "sidecar get without a sidecar exits 1" 1

# ---- put-chain, stat, refresh ----------------------------------------------------------------

mkdir -p "$TMP/chain"
for i in 0 1 2; do head -c $((1000 + i)) /dev/urandom >"$TMP/chain/block$i"; done
run "$WKV" --json put-chain --dir "$TMP/chain"
check_json "put-chain --dir publishes one chain (tip as chain id)" "$TMP/out" \
  "(len(d['blocks']), d['chain_id']==d['tip']==d['blocks'][-1]['key'], d['version'])" \
  "(3, True, 1)"
if [[ $RC == 0 ]]; then
  mapfile -t CHAIN_KEYS < <(json "'\n'.join(b['key'] for b in d['blocks'])" <"$TMP/out")
  run "$WKV" lookup "${CHAIN_KEYS[@]}"
  if [[ $RC == 0 && $(out) == 3 ]]; then pass "put-chain blocks are visible to lookup"
  else fail "put-chain blocks are visible to lookup" "rc=$RC out=$(out)"; fi
fi
run "$WKV" put-chain --file "$TMP/chain/block0" "$TMP/chain/block1"
check_rc "put-chain --file" 0
run "$WKV" put-chain
check_rc "put-chain without blocks exits 2" 2

run "$WKV" --json stat
check_json "stat --json parses" "$TMP/out" "d['stats']['l0_chains'] >= 2" "True"
run "$WKV" stat
check_rc "stat" 0
run "$WKV" --json refresh
check_json "refresh --json parses" "$TMP/out" "'heads_listed' in d" "True"

# ---- usage errors and bad arguments: exit 2, naming the argument ------------------------------

run "$WKV" lookup zz
check_rc "bad hex key exits 2 naming KEY_HEX" 2 "KEY_HEX"
run "$WKV" put "$K1" --parent 12345 --value x
check_rc "bad --parent exits 2 naming it" 2 "--parent"
run "$WKV" publish "$K1" nothex
check_rc "bad tip exits 2 naming TIP_HEX" 2 "TIP_HEX"
run "$WKV" publish "${K1}00" "$K1"
check_rc "a 66-digit chain id exits 2 naming CHAIN_ID_HEX" 2 "CHAIN_ID_HEX"
run "$WKV" cat abc
check_rc "bad content hash exits 2 naming CONTENT_HASH_HEX" 2 "CONTENT_HASH_HEX"
run "$WKV" --fingerprint 1234 ls
check_rc "bad --fingerprint exits 2 naming it" 2 "--fingerprint"
run "$WKV" -n 'bad/ns' ls
check_rc "bad --namespace exits 2 naming it" 2 "namespace"
run "$WKV" --json lookup zz
check_json "bad hex with --json: error JSON on stderr" "$TMP/err" "d['error']['exit']" "2"
run "$WKV" put "$K1"
check_rc "put without a payload source exits 2" 2 "--value"
run "$WKV" put "$K1" --value a --file "$TMP/b1"
check_rc "put with two payload sources exits 2" 2
run "$WKV" put "$K1" --file "$TMP/does-not-exist"
check_rc "put --file of a missing file exits 2" 2 "does-not-exist"
run "$WKV" frobnicate
check_rc "an unknown command exits 2 naming it" 2 "unknown command \"frobnicate\""
run "$WKV"
check_rc "no command exits 2" 2
run "$WKV" get
check_rc "get without keys exits 2" 2 "KEY_HEX"
run "$WKV" publish "$K1" "$K1" --expect-version x
check_rc "a non-numeric --expect-version exits 2" 2 "expect-version"
if [[ $(wc -l <"$TMP/err") == 1 ]] && grep -q '^wombatkv: .*: .*; ' "$TMP/err"; then
  pass "errors are one line: wombatkv: <what>: <why>; <what to do>"
else
  fail "errors are one line: wombatkv: <what>: <why>; <what to do>" "$(err)"
fi

# ---- a data directory locked by another process: exit 5 ---------------------------------------
# The store locks DATA_DIR/LOCK with flock(2); flock(1) holds that same lock. The holder is a
# subshell that takes the lock on fd 9, says "ready" through a FIFO, then becomes `sleep` (same
# PID, still holding fd 9), so there is no polling and killing $HOLDER_PID releases the lock.

if command -v flock >/dev/null; then
  mkfifo "$TMP/ready"
  (
    exec 9>>"$WMBT_KV_DATA_DIR/LOCK"
    flock -x -n 9 && echo ready && exec sleep 300
  ) >"$TMP/ready" &
  HOLDER_PID=$!
  read -r state <"$TMP/ready"
  if [[ $state == ready ]]; then
    run "$WKV" ls
    check_rc "a second process on a locked data directory exits 5" 5 "$WMBT_KV_DATA_DIR"
    run "$WKV" --json lookup "$K1"
    check_json "locked data directory with --json" "$TMP/err" \
      "(d['error']['code'], d['error']['exit'])" "('FAILED_PRECONDITION', 5)"
    run "$WL" --data-dir "$WMBT_KV_DATA_DIR" --conversations 1 --turns 1 --block-bytes 1024 --quiet
    check_rc "the workload on a locked data directory exits 5" 5
  else
    fail "could not take the data directory lock with flock(1)"
  fi
  kill "$HOLDER_PID" 2>/dev/null
  wait "$HOLDER_PID" 2>/dev/null
  HOLDER_PID=""
else
  echo "skip  locked data directory (flock(1) not installed)"
fi
run "$WKV" lookup "$K1"
check_rc "the data directory is usable again once the other process is gone" 0

# ---- the workload, twice ---------------------------------------------------------------------

WLDIR=$TMP/workload
WL_ARGS=(--data-dir "$WLDIR" --conversations 2 --turns 2 --block-bytes 4096 --quiet)
run "$WL" "${WL_ARGS[@]}" --json
cp "$TMP/out" "$TMP/wl1.json"
check_json "workload run 1 stores blocks and verifies every restored byte" "$TMP/wl1.json" \
  "(d['error'], d['mismatched_blocks'], d['blocks_put'] > 0, d['blocks_from_earlier_run'])" \
  "(None, 0, True, 0)"
run "$WL" "${WL_ARGS[@]}" --json
cp "$TMP/out" "$TMP/wl2.json"
check_json "workload run 2 restores everything run 1 stored (hits across restart)" \
  "$TMP/wl2.json" \
  "(d['mismatched_blocks'], d['blocks_put'], d['blocks_missed'],
    d['blocks_from_earlier_run'] == d['blocks_hit'] > 0)" \
  "(0, 0, 0, True)"
run "$WL" "${WL_ARGS[@]}"
if [[ $RC == 0 ]] && grep -q "from earlier run" "$TMP/out" &&
  grep -q "restored across restart" "$TMP/out"; then
  pass "the human summary shows the blocks restored from an earlier run"
else
  fail "the human summary shows the blocks restored from an earlier run" "rc=$RC" "$(out)"
fi

mkdir -p "$TMP/precious"
echo keep >"$TMP/precious/notes.txt"
run "$WL" --data-dir "$TMP/precious" --fresh --conversations 1 --turns 1 --quiet
if [[ $RC == 5 && -f $TMP/precious/notes.txt ]]; then
  pass "--fresh refuses a directory that is not a WombatKV data directory (exit 5)"
else
  fail "--fresh refuses a directory that is not a WombatKV data directory (exit 5)" "rc=$RC"
fi
run "$WL" "${WL_ARGS[@]}" --fresh --json
check_json "--fresh starts from an empty data directory" "$TMP/out" \
  "(d['at_start']['chains'], d['blocks_from_earlier_run'], d['fresh'])" "(0, 0, True)"
run "$WL" --conversations 0
check_rc "workload: bad --conversations exits 2" 2 "conversations"
run "$WL" --block-bytes lots
check_rc "workload: bad --block-bytes exits 2" 2 "block-bytes"

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
