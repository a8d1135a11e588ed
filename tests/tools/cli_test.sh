#!/usr/bin/env bash
# cli_test.sh WOMBATKV_BIN WORKLOAD_BIN [WOMBATKVD_BIN] — drives the real `wombatkv` and
# `wombatkv-workload` binaries on a temporary data directory: the put/publish/lookup/get/cat/ls/
# inspect/sidecar round trip, --json output, the documented exit codes (miss 1, usage 2, conflict
# 3, corruption 4, locked 5, unavailable 6, permission denied 8), every --help, and a short
# workload run twice (the second run must restore what the first stored). With WOMBATKVD_BIN, the block and chain commands again against a real wombatkvd,
# over TCP and over shared memory, and the refusal of the offline commands there.
#
# Prints one line per check and "N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -u

if (($# != 2 && $# != 3)); then
  echo "usage: $0 WOMBATKV_BIN WORKLOAD_BIN [WOMBATKVD_BIN]" >&2
  exit 2
fi
WKV=$1
WL=$2
WKVD=${3:-}
# shellcheck source=tests/tools/cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
cli_test_setup cli-test "$WKV" "$WL"

key() { printf "%0.s$1" $(seq 64); }  # 64 copies of one hex digit
K1=$(key 1)
K2=$(key 2)
K3=$(key 3)
K9=$(key 9)

# ---- --help of every command ------------------------------------------------------------------

run "$WKV" --help
if [[ $RC == 0 ]] && grep -q "Exit codes" "$TMP/out" && grep -q "held by another process, disk full" "$TMP/out"; then
  pass "wombatkv --help exits 0 and documents the exit codes"
else
  fail "wombatkv --help exits 0 and documents the exit codes" "rc=$RC"
fi
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
# A pipe, a FIFO or a /proc file has no size to trust: --file reads it to its end ("-": stdin).
K8=$(key 8)
run "$WKV" --json put "$K8" --file <(printf 'bytes from a pipe')
check_json "put --file of a pipe stores all it carries" "$TMP/out" "d['bytes']" "17"
run "$WKV" --json put "$K8" --file - <"$TMP/b2"
check_json "put --file - reads standard input" "$TMP/out" "d['bytes']" "5000"
run "$WKV" --json put-chain --file <(printf 'a') <(printf 'bc')
check_json "put-chain --file of pipes" "$TMP/out" "[b['bytes'] for b in d['blocks']]" "[1, 2]"
run "$WKV" --json put "$K8" --file /proc/self/status
check_json "put --file of a /proc file (regular, of size 0) stores what it reads" "$TMP/out" \
  "d['bytes'] > 0" "True"
run "$WKV" --lock-wait 30 ls
check_rc "--lock-wait needs its unit" 2 "a number needs its unit"
run "$WKV" put "$K8" --file /dev/zero
check_rc "put --file of an endless stream stops at the limit and exits 2" 2 "268435456 bytes"

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

run "$WKV" --json get "$K2"
check_json "get of the second block alone (seed step 5)" "$TMP/out" \
  "[b['bytes'] for b in d['blocks']]" "[5000]"

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

# --block-compress (WMBT_KV_BLOCK_COMPRESS): the blob is stored smaller (its own file: packing
# off), and read back by an invocation that does not compress.
python3 -c 'import sys; sys.stdout.buffer.write(bytes(i % 7 for i in range(100000)))' >"$TMP/b4"
K4=$(key 4)
run "$WKV" --block-compress zstd:3 --l2-packed-bytes 0 put "$K4" --file "$TMP/b4" --publish
H4=$(out)
BLOB4="$WMBT_KV_DATA_DIR/l2/kv/default/wombatkv/v1/blob/$H4"
if [[ $RC == 0 && -f $BLOB4 ]] && (($(stat -c %s "$BLOB4") < 50000)); then
  pass "put --block-compress stores the blob compressed"
else
  fail "put --block-compress stores the blob compressed" "rc=$RC $(ls -l "$BLOB4" 2>&1)"
fi
run "$WKV" cat "$H4"
if [[ $RC == 0 ]] && cmp -s "$TMP/b4" "$TMP/out"; then pass "a compressed blob reads back exactly"
else fail "a compressed blob reads back exactly" "rc=$RC"; fi
run "$WKV" --block-compress zstd:99 stat
check_rc "a bad --block-compress exits 2 naming the setting" 2 "WMBT_KV_BLOCK_COMPRESS"
# A malformed variable fails the command, naming it and where settings are listed, unless the
# command line gives that setting's flag, which overrides the variable (as in wombatkvd).
WMBT_KV_CACHE_BYTES=lots run "$WKV" stat
check_rc "a malformed variable exits 2 naming it" 2 'WMBT_KV_CACHE_BYTES="lots"'
check_rc "a malformed variable's error points to the settings table" 2 "docs/configuration.md"
WMBT_KV_CACHE_BYTES=lots run "$WKV" --cache-bytes 64M stat
check_rc "a setting's flag overrides its malformed variable" 0
WMBT_KV_NAMESPACE=bad/ns run "$WKV" -n default ls
check_rc "-n overrides a malformed WMBT_KV_NAMESPACE" 0

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
mkdir -p "$TMP/numbered"
for i in 0 1 2 9 10 11; do printf 'block %s' "$i" >"$TMP/numbered/b$i"; done
run "$WKV" --json put-chain --dir "$TMP/numbered"
check_json "put-chain --dir orders numbered files as numbers" "$TMP/out" \
  "[b['file'].rsplit('/', 1)[1] for b in d['blocks']]" "['b0', 'b1', 'b2', 'b9', 'b10', 'b11']"
run "$WKV" put-chain
check_rc "put-chain without blocks exits 2" 2

run "$WKV" --json stat
check_json "stat --json parses" "$TMP/out" "d['stats']['l0_chains'] >= 2" "True"
run "$WKV" stat
check_rc "stat" 0
run "$WKV" --json refresh
check_json "refresh --json parses" "$TMP/out" "'heads_listed' in d" "True"

# ---- a damaged blob: exit 4, nothing served ---------------------------------------------------

# One byte of a stored payload flipped on disk (in the local L2's journal file that holds it):
# the read reports corruption naming the object and serves no byte, every time (SPEC G9).
run "$WKV" --data-dir "$TMP/damaged" put "$K1" --value "DAMAGE-ME-0123456789abcdef" --publish
check_rc "put of the block to damage" 0
python3 -c 'import glob, sys
for p in glob.glob(sys.argv[1] + "/l2/**/.~journal-*", recursive=True):
    b = bytearray(open(p, "rb").read())
    i = b.find(b"DAMAGE-ME")
    if i >= 0:
        b[i + 4] ^= 1
        open(p, "wb").write(b)
        print(p)' "$TMP/damaged" >"$TMP/damaged.txt"
if [[ -s $TMP/damaged.txt ]]; then pass "the payload's bytes were found on disk and one flipped"
else fail "the payload's bytes were found on disk and one flipped" "not in any journal file"; fi
for attempt in 1 2; do
  run "$WKV" --data-dir "$TMP/damaged" get "$K1"
  check_rc "get of a damaged block exits 4 naming the object (read $attempt)" 4 \
    "corruption detected: object kv/default/wombatkv/v1/blob/"
  if [[ ! -s $TMP/out ]]; then pass "no byte of the damaged block is written (read $attempt)"
  else fail "no byte of the damaged block is written (read $attempt)" "$(head -c 100 "$TMP/out")"; fi
done

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
run "$WKV" pubish
check_rc "a misspelled command is given the nearest one" 2 "did you mean \`wombatkv publish\`?"
run "$WKV" help put
if [[ $RC == 0 ]] && grep -q "Usage: wombatkv put \[OPTIONS\] KEY_HEX" "$TMP/out"; then
  pass "help COMMAND prints the command's help"
else fail "help COMMAND prints the command's help" "rc=$RC out=$(out)"; fi
run "$WKV" help pbulish
check_rc "help of an unknown command is a usage error with a suggestion" 2 'did you mean `wombatkv publish`'
# A mistyped data directory is not an empty store: reading commands find it missing.
for cmd in ls stat "lookup $K1" "get $K1" "inspect $K1" "publish $K1 $K1" audit du gc; do
  # shellcheck disable=SC2086 # the command's words
  run "$WKV" --data-dir "$TMP/mistyped/dir" $cmd
  check_rc "$cmd on a missing data directory exits 1 naming it" 1 "no data directory at"
done
if [[ -e $TMP/mistyped ]]; then fail "reading commands create no data directory" "it exists"
else pass "reading commands create no data directory"; fi
: >"$TMP/a-file"
run "$WKV" --data-dir "$TMP/a-file" ls
check_rc "a data directory that is a file is a usage error naming it" 2 "a-file is not a directory"
mkdir -p "$TMP/not-ours" && : >"$TMP/not-ours/notes.txt"
for cmd in ls audit du; do
  run "$WKV" --data-dir "$TMP/not-ours" $cmd
  check_rc "$cmd of a directory no store has used exits 1 saying so" 1 \
    "is not a WombatKV data directory"
done
if [[ $(ls -A "$TMP/not-ours") == notes.txt ]]; then pass "reading commands write nothing into it"
else fail "reading commands write nothing into it" "it holds: $(ls -A "$TMP/not-ours")"; fi
run env WMBT_KV_CACHE_BYTES=lots "$WKV" --help
check_out "--help works with a malformed variable" 0 "Usage: wombatkv"
run env WMBT_KV_CACHE_BYTES=lots "$WKV" ls
check_rc "a command with a malformed variable exits 2 naming it" 2 "WMBT_KV_CACHE_BYTES"
run "$WKV" publish "$K1" "$K1" --expect-version 99999999999999999999999
check_rc "a number past 2^64-1 exits 2 before anything is done" 2 "is too large"
if [[ -w /dev/full ]]; then
  "$WKV" ls >/dev/full 2>"$TMP/err"; RC=$?
  check_rc "output lost on a full device exits 5, not 0" 5 "cannot write to stdout"
  "$WKV" --json ls >/dev/full 2>"$TMP/err"; RC=$?
  check_json "... and with --json says so as one JSON object" "$TMP/err" "d['error']['exit']" "5"
fi
mkdir -p "$TMP/with-fifo" && printf 'block' >"$TMP/with-fifo/b0" && mkfifo "$TMP/with-fifo/b1"
run timeout 20 "$WKV" --json put-chain --dir "$TMP/with-fifo"
check_json "put-chain --dir takes regular files only (a FIFO would block)" "$TMP/out" \
  "len(d['blocks'])" "1"
python3 -c 'import os, sys
os.makedirs(sys.argv[1])
for i in range(65537): open("%s/%06d" % (sys.argv[1], i), "wb").close()' "$TMP/huge"
run "$WKV" put-chain --dir "$TMP/huge"
check_rc "put-chain of more files than one batch holds exits 2 naming the limit" 2 "65536 blocks"
rm -rf "$TMP/huge"
run "$WKV" --upload-threads 0 stat
check_rc "a bad store-setting flag exits 2 naming the flag" 2 "--upload-threads"
run "$WKV" --s3-prefix x frobnicate
check_rc "a store-setting flag's value is not taken for the command" 2 "unknown command \"frobnicate\""
# Store-setting flags reach the store: --bucket selects S3 as L2 (here at a port nobody serves).
run "$WKV" --data-dir "$TMP/s3flags" --bucket flagbucket --s3-endpoint http://127.0.0.1:9 \
  --s3-retries 0 stat
check_rc "--bucket and --s3-endpoint select S3 as L2 (unavailable: exit 6)" 6 \
  "s3://flagbucket/ at http://127.0.0.1:9"
check_rc "--s3-retries 0 makes one attempt" 6 "after 1 attempt:"
check_rc "an S3 endpoint nothing answers at asks whether a server runs there" 6 \
  "is an S3 server running at http://127.0.0.1:9"
run "$WKV"
check_rc "no command exits 2" 2
run "$WKV" get
check_rc "get without keys exits 2" 2 "KEY_HEX"
run "$WKV" publish "$K1" "$K1" --expect-version x
check_rc "a non-numeric --expect-version exits 2" 2 "expect-version"
run "$WKV" publish "$K1" "$K1" --expect-version -1
check_rc "a negative --expect-version exits 2 (not a CAS on version 2^64-1)" 2 "whole number"
if [[ $(wc -l <"$TMP/err") == 1 ]] && grep -q '^wombatkv: .*: .*; ' "$TMP/err"; then
  pass "errors are one line: wombatkv: <what>: <why>; <what to do>"
else
  fail "errors are one line: wombatkv: <what>: <why>; <what to do>" "$(err)"
fi

# ---- a data directory locked by another process: exit 5 ---------------------------------------

if lock_data_dir; then
  run "$WKV" ls
  check_rc "a second process on a locked data directory exits 5" 5 "$WMBT_KV_DATA_DIR"
  run "$WKV" --json lookup "$K1"
  check_json "locked data directory with --json" "$TMP/err" \
    "(d['error']['code'], d['error']['exit'])" "('FAILED_PRECONDITION', 5)"
  run "$WL" --data-dir "$WMBT_KV_DATA_DIR" --conversations 1 --turns 1 --block-bytes 1024 --quiet
  check_rc "the workload on a locked data directory exits 5" 5
  unlock_data_dir
fi
run "$WKV" lookup "$K1"
check_rc "the data directory is usable again once the other process is gone" 0
# Held by another wombatkv command (scripts run several at once): wait for it, --lock-wait long.
if lock_data_dir "pid 1 (wombatkv) on host test"; then
  run "$WKV" --lock-wait 0s ls
  check_rc "--lock-wait 0s fails at once on a directory another command holds" 5 "(wombatkv)"
  check_rc "and says to wait longer" 5 "wait longer with --lock-wait (waited 0s)"
  # The holder goes once the command says it waits (bounded: 60 s, not a timing assertion).
  : >"$TMP/err"
  (
    for _ in $(seq 600); do
      grep -q "waiting for another wombatkv command" "$TMP/err" && break
      sleep 0.1
    done
    kill "$HOLDER_PID"
  ) &
  run "$WKV" --lock-wait 120s lookup "$K1"
  check_rc "a command waits for another that holds the directory, then runs" 0 \
    "waiting for another wombatkv command"
  unlock_data_dir
fi
# The note names the program, not its file: a linked or copied wombatkv is still waited for.
ln -sf "$WKV" "$TMP/wkv-renamed"
run "$TMP/wkv-renamed" lookup "$K1"
check_rc "wombatkv run under another name" 0
if grep -q "(wombatkv) on host" "$WMBT_KV_DATA_DIR/LOCK"; then
  pass "a wombatkv run under another name notes the directory as held by wombatkv"
else
  fail "a wombatkv run under another name noted the directory as: $(cat "$WMBT_KV_DATA_DIR/LOCK")"
fi

# ---- a data directory this user may not write: exit 8, not "in use" ---------------------------

# As root, the check runs as nobody (root writes anywhere); else on a directory made read-only.
mkdir -p "$TMP/ro" && "$WKV" --data-dir "$TMP/ro" put "$K1" --value x >/dev/null 2>&1
chmod 711 "$TMP" && chmod 555 "$TMP/ro" && chmod 444 "$TMP/ro/LOCK" "$TMP/ro/l2/.~journal.lock"
as_other=()
if ((EUID == 0)); then as_other=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
run "${as_other[@]}" "$WKV" --data-dir "$TMP/ro" ls
check_rc "a data directory this user cannot write exits 8 and says so" 8 \
  "cannot write data directory $TMP/ro"
run "${as_other[@]}" "$WKV" --data-dir "$TMP/ro" du
check_out "du (read only) of a data directory this user cannot write still reports" 0 "TOTAL"
chmod 755 "$TMP/ro" && chmod 644 "$TMP/ro/LOCK" "$TMP/ro/l2/.~journal.lock"

printf 'x' >"$TMP/unreadable" && chmod 000 "$TMP/unreadable"
run "${as_other[@]}" "$WKV" --data-dir "$TMP/ro" put "$K3" --file "$TMP/unreadable"
check_rc "an input file this user may not read exits 2 naming it" 2 "cannot read $TMP/unreadable"

# An L1 that cannot be opened for a reason other than damage (a file it may not read) is not
# rebuilt by audit --repair: the rebuild would lose its unpublished puts.
L1P=$TMP/l1perm
"$WKV" --data-dir "$L1P" put "$K1" --value x --publish >/dev/null 2>&1
"$WKV" --data-dir "$L1P" put "$K2" --parent "$K1" --value y >/dev/null 2>&1
sst=$(find "$L1P/l1" -name '*.sst' | head -1)
if [[ -n $sst ]]; then
  if ((EUID == 0)); then chown -R 65534:65534 "$L1P"; fi
  chmod 000 "$sst"
  run "${as_other[@]}" "$WKV" --data-dir "$L1P" audit --repair
  if [[ $RC != 0 ]] && grep -qF "open L1 at $L1P/l1" "$TMP/err"; then
    pass "audit --repair of an L1 it may not read fails naming it"
  else fail "audit --repair of an L1 it may not read fails naming it" "rc=$RC err=$(err)"; fi
  chmod 644 "$sst"
  run "$WKV" --data-dir "$L1P" publish "$K2" "$K2"
  check_rc "... and the unpublished put is still there to publish" 0
else
  fail "audit --repair of an L1 it may not read" "no table file in $L1P/l1"
fi

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
mkdir -p "$WLDIR/cache/default"  # the disk cache an S3 L2 has
run "$WL" "${WL_ARGS[@]}" --fresh --json
check_json "--fresh starts from an empty data directory" "$TMP/out" \
  "(d['at_start']['chains'], d['blocks_from_earlier_run'], d['fresh'])" "(0, 0, True)"
if [[ ! -e $WLDIR/cache ]]; then
  pass "--fresh wipes the disk cache directory too"
else
  fail "--fresh wipes the disk cache directory too" "$(ls "$WLDIR")"
fi
WMBT_KV_BUCKET=some-bucket run "$WL" "${WL_ARGS[@]}" --fresh
check_rc "--fresh with an S3 L2 is refused (the bucket keeps earlier runs)" 2 "WMBT_KV_S3_PREFIX"
run "$WL" --conversations 0
check_rc "workload: bad --conversations exits 2" 2 "conversations"
run "$WL" --block-bytes lots
check_rc "workload: bad --block-bytes exits 2" 2 "block-bytes"

# ---- against a real wombatkvd: TCP and shared memory ------------------------------------------
# One daemon serves both transports from its own data directory; the CLI reaches it through the
# same settings (and code, src/connect) as the C ABI. What one transport writes the other reads.

if [[ -n $WKVD ]]; then
  run "$WKVD" --data-dir "$TMP/bad-flag" --tcp 127.0.0.1:0 --gc-grace soon
  check_rc "wombatkvd: a bad store-setting flag exits 2 naming the flag" 2 "--gc-grace"
  run "$WKVD" --data-dir "$TMP/bad-flag" --tcp 127.0.0.1:0 --namespace team-a
  check_rc "wombatkvd: a client's flag exits 2 saying where it belongs" 2 \
    "--namespace is a client setting (WMBT_KV_NAMESPACE"
  DDIR=$TMP/daemon
  mkdir -p "$DDIR"
  PREFIX=cli-test-$$
  "$WKVD" --data-dir "$DDIR/data" --tcp 127.0.0.1:0 --prefix "$PREFIX" --run-dir "$DDIR" \
    --shm-data-bytes 16M --cache-bytes 16M --auth-token cli-token=limited \
    --block-compress zstd --l2-packed-bytes 0 --shm-group 4242 >"$DDIR/out" 2>"$DDIR/err" &
  HOLDER_PID=$!
  await_ready "$DDIR/out"
  ADDR=$(sed -n 's|.*listening on tcp://\([^ ]*\).*|\1|p' "$DDIR/out" | head -n 1)
  if ! grep -q "wombatkvd: ready" "$DDIR/out" || [[ -z $ADDR ]]; then
    fail "wombatkvd starts for the CLI checks" "$(head -c 600 "$DDIR/err")"
  else
    pass "wombatkvd starts for the CLI checks (tcp://$ADDR, prefix $PREFIX)"
    TCP=("$WKV" --tcp-addr "$ADDR")
    SHM=(env WMBT_KV_RUN_DIR="$DDIR" "$WKV" --remote-prefix "$PREFIX")

    run "${TCP[@]}" put "$K1" --file "$TMP/b1"
    check_rc "daemon/tcp: put" 0
    run "${TCP[@]}" put "$K2" --parent "$K1" --file "$TMP/b2"
    check_rc "daemon/tcp: put of a child block" 0
    run "${TCP[@]}" lookup "$K1" "$K2"
    if [[ $RC == 0 && $(out) == 0 ]]; then pass "daemon/tcp: put blocks stay invisible until published"
    else fail "daemon/tcp: put blocks stay invisible until published" "rc=$RC out=$(out)"; fi
    run "${TCP[@]}" publish "$K2" "$K2"
    if [[ $RC == 0 && $(out) == 1 ]]; then pass "daemon/tcp: publish prints version 1"
    else fail "daemon/tcp: publish prints version 1" "rc=$RC out=$(out)"; fi

    run "${SHM[@]}" lookup "$K1" "$K2" "$K3"
    if [[ $RC == 0 && $(out) == 2 ]]; then pass "daemon/shm: lookup sees the chain published over TCP"
    else fail "daemon/shm: lookup sees the chain published over TCP" "rc=$RC out=$(out)"; fi
    # The shared-memory client's own settings as flags (both sides read them; once refused as
    # "a setting of the store").
    run "$WKV" --remote-prefix "$PREFIX" --run-dir "$DDIR" --shm-group 4242 lookup "$K1" "$K2"
    if [[ $RC == 0 && $(out) == 2 ]]; then pass "daemon/shm: --run-dir and --shm-group find the daemon"
    else fail "daemon/shm: --run-dir and --shm-group find the daemon" "rc=$RC out=$(out) $(err)"; fi
    run "${SHM[@]}" get "$K1" "$K2" --out "$TMP/dget"
    if [[ $RC == 0 ]] && cmp -s "$TMP/b1" "$TMP/dget/$K1.bin" &&
      cmp -s "$TMP/b2" "$TMP/dget/$K2.bin"; then
      pass "daemon/shm: get restores the exact bytes"
    else
      fail "daemon/shm: get restores the exact bytes" "rc=$RC"
    fi
    run "$WKV" --data-dir "$DDIR/data" ls
    check_rc "the daemon's data directory, opened embedded, says to go through the daemon" 5 \
      "reach its store through that wombatkvd"
    # The daemon's --block-compress: a compressible block is stored smaller (its own file).
    run "${TCP[@]}" put "$K4" --file "$TMP/b4" --publish
    DBLOB4="$DDIR/data/l2/kv/default/wombatkv/v1/blob/$(out)"
    if [[ $RC == 0 && -f $DBLOB4 ]] && (($(stat -c %s "$DBLOB4") < 50000)); then
      pass "daemon --block-compress: the blob is stored compressed"
    else
      fail "daemon --block-compress: the blob is stored compressed" "rc=$RC $(ls -l "$DBLOB4" 2>&1)"
    fi
    run "${SHM[@]}" get "$K4" --out "$TMP/dget4"
    if [[ $RC == 0 ]] && cmp -s "$TMP/b4" "$TMP/dget4/$K4.bin"; then
      pass "daemon/shm: get restores a compressed block's exact bytes"
    else
      fail "daemon/shm: get restores a compressed block's exact bytes" "rc=$RC"
    fi
    run "${SHM[@]}" put "$K3" --parent "$K2" --value "third" --publish
    check_rc "daemon/shm: put --publish extends the chain" 0
    run "${TCP[@]}" --json ls
    check_json "daemon/tcp: ls lists the chain extended over shared memory" "$TMP/out" \
      "[(c['version'], c['blocks']) for c in d['chains'] if c['chain_id'] == '$K3']" "[(1, 3)]"
    run "${TCP[@]}" publish "$K3" "$K3" --expect-version 0
    check_rc "daemon/tcp: a lost --expect-version race exits 3 with the current version" 3 \
      "--expect-version 1"
    run "${SHM[@]}" inspect "$K3"
    check_out "daemon/shm: inspect shows the chain" 0 "$K1"
    run "${SHM[@]}" sidecar put "$K3" --value "sidecar bytes"
    check_rc "daemon/shm: sidecar put" 0
    run "${TCP[@]}" sidecar get "$K3"
    check_out "daemon/tcp: sidecar get reads it back" 0 "sidecar bytes"
    run "${TCP[@]}" --json stat
    check_json "daemon/tcp: stat shows the daemon and its counters" "$TMP/out" \
      "(d['daemon'].startswith('wombatkvd'), 'data_dir' in d, d['stats']['publishes'] >= 2)" \
      "(True, False, True)"
    # On loopback no token is needed; one sent is checked, and its namespace limit holds.
    WMBT_KV_AUTH_TOKEN=cli-token run "${TCP[@]}" -n other lookup "$K1"
    check_rc "daemon/tcp: a namespace the token does not grant exits 8 naming it" 8 \
      "namespace \"other\" is not granted"
    WMBT_KV_AUTH_TOKEN=cli-token run "${TCP[@]}" -n other ls
    check_rc "daemon/tcp: ls of a namespace the token does not grant exits 8, not an empty list" 8 \
      "namespace \"other\" is not granted"
    WMBT_KV_AUTH_TOKEN=not-a-token run "${TCP[@]}" lookup "$K1"
    check_rc "daemon/tcp: a token the daemon does not know exits 8" 8 "auth token was refused"
    run "${TCP[@]}" lookup "$K9"
    if [[ $RC == 0 && $(out) == 0 ]]; then pass "daemon/tcp: a miss is 0, exit 0"
    else fail "daemon/tcp: a miss is 0, exit 0" "rc=$RC out=$(out)"; fi
    # The data directory given to the CLI is not touched when a daemon is selected.
    run "${TCP[@]}" --data-dir "$TMP/untouched" lookup "$K1"
    if [[ $RC == 0 && ! -e $TMP/untouched ]]; then pass "daemon/tcp: --data-dir is not opened"
    else fail "daemon/tcp: --data-dir is not opened" "rc=$RC"; fi

    for cmd in "gc" "audit --repair" "du"; do
      # shellcheck disable=SC2086
      run "${TCP[@]}" $cmd
      check_rc "daemon/tcp: $cmd refuses and says what it needs" 5 "--data-dir set to the daemon's"
    done
    # --shm-group: another user reaches the daemon's shared memory through the group only.
    if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
      chmod 0711 "$TMP" "$DDIR"  # the other user may reach the socket path, not list it
      AS_NOBODY=(setpriv --reuid 65534 --regid 65534)
      run "${AS_NOBODY[@]}" --groups 4242 -- "${SHM[@]}" lookup "$K1" "$K2"
      if [[ $RC == 0 && $(out) == 2 ]]; then
        pass "daemon --shm-group: a member of the group attaches over shared memory"
      else
        fail "daemon --shm-group: a member of the group attaches over shared memory" \
          "rc=$RC out=$(out)"
      fi
      run "${AS_NOBODY[@]}" --clear-groups -- "${SHM[@]}" lookup "$K1"
      check_rc "daemon --shm-group: another user outside it exits 8 naming the setting" 8 \
        "WMBT_KV_SHM_GROUP"
    else
      echo "skip  daemon --shm-group checks (they run another user: need root and setpriv)"
    fi
    run "$WKV" --remote-prefix "no-such-daemon-$$" lookup "$K1"
    check_rc "no daemon at the prefix: exit 6 naming the setting" 6 "WMBT_KV_REMOTE_PREFIX"
    run "$WKV" --tcp-addr "not an address" lookup "$K1"
    check_rc "a malformed --tcp-addr exits 2 naming the flag" 2 "--tcp-addr"
    run "${TCP[@]}" --bucket some-other-bucket ls
    check_rc "a store setting's flag through a daemon exits 2 naming it (not silently ignored)" 2 \
      "--bucket: invalid argument: not taken through wombatkvd"
  fi
  stop_daemon "wombatkvd stops gracefully after the CLI checks"
else
  echo "skip  wombatkvd checks (no WOMBATKVD_BIN given)"
fi

cli_test_summary
