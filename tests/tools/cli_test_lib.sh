# cli_test_lib.sh — sourced by the tests/tools/*_test.sh scripts, which drive the real `wombatkv`
# binaries: a scratch directory, a clean WMBT_KV_* environment, and the run/check helpers, so every
# script reports its checks the same way ("ok"/"FAIL" lines, then "N passed, M failed").
#
# Sets: TMP (removed on exit), WMBT_KV_DATA_DIR=$TMP/data, PASSED, FAILED, HOLDER_PID (a process
# the script starts and wants killed on exit, e.g. a lock holder; "" for none).
# Uses: WKV (the wombatkv binary) in help_case.

# cli_test_setup NAME BIN...: exits 2 unless every BIN is executable, then makes $TMP and cleans
# the environment: only the data directory comes from it, no WMBT_KV_* or AWS_* of the caller's.
cli_test_setup() {
  local name=$1 bin
  shift
  for bin in "$@"; do
    if [[ ! -x $bin ]]; then
      echo "$name: $bin is not an executable" >&2
      exit 2
    fi
  done
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/wombatkv-$name.XXXXXX")
  HOLDER_PID=""
  trap cli_test_cleanup EXIT
  local var
  while IFS='=' read -r var _; do
    [[ $var == WMBT_KV_* || $var == AWS_* ]] && unset "$var"
  done < <(env)
  export WMBT_KV_DATA_DIR=$TMP/data
  PASSED=0
  FAILED=0
}

cli_test_cleanup() {
  if [[ -n $HOLDER_PID ]]; then kill "$HOLDER_PID" 2>/dev/null; wait "$HOLDER_PID" 2>/dev/null; fi
  rm -rf "$TMP"
}

# cli_test_summary: prints the totals; returns 1 if anything failed (use as the last command).
cli_test_summary() {
  echo "$PASSED passed, $FAILED failed"
  ((FAILED == 0))
}

pass() { PASSED=$((PASSED + 1)); echo "ok    $1"; }
# fail NAME [DETAIL...]: DETAIL lines, then the last run's stderr if it said anything.
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

# check_rc NAME WANT_RC [NEEDLE]: the last run's exit code, and NEEDLE in its stderr.
# check_out NAME WANT_RC NEEDLE: the same with NEEDLE in its stdout (reports, tables).
check_rc() { check_run "$1" "$2" "${3:-}" err; }
check_out() { check_run "$1" "$2" "$3" out; }
check_run() {
  local name=$1 want=$2 needle=$3 stream=$4
  if [[ $RC != "$want" ]]; then
    fail "$name" "exit code $RC, want $want" "stdout: $(head -c 600 "$TMP/out")"
  elif [[ -n $needle ]] && ! grep -qF -- "$needle" "$TMP/$stream"; then
    fail "$name" "std$stream does not mention \"$needle\""
  else
    pass "$name"
  fi
}

# await_ready OUT: waits until the daemon $HOLDER_PID printed "wombatkvd: ready" to OUT, or
# exited; bounded (60 s), not a timing assertion. Returns 0 when it is ready.
await_ready() {
  local _
  for _ in $(seq 600); do
    grep -q "wombatkvd: ready" "$1" && return 0
    kill -0 "$HOLDER_PID" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "wombatkvd: ready" "$1"
}

# stop_daemon NAME [OUT]: SIGTERM to the daemon $HOLDER_PID; a pass when it exits 0 (and, with
# OUT, printed "wombatkvd: stopped" there). Clears HOLDER_PID.
stop_daemon() {
  local name=$1 out=${2:-} rc
  kill -TERM "$HOLDER_PID" 2>/dev/null
  wait "$HOLDER_PID" 2>/dev/null
  rc=$?
  HOLDER_PID=""
  if [[ $rc == 0 ]] && { [[ -z $out ]] || grep -q "wombatkvd: stopped" "$out"; }; then
    pass "$name"
  else
    fail "$name" "exit $rc"
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

# lock_data_dir: another process takes the data directory's lock, as a second wombatkv would.
# The store locks DATA_DIR/LOCK with flock(2); flock(1) holds that same lock. The holder is a
# subshell that takes the lock on fd 9, says "ready" through a FIFO, then becomes `sleep` (same
# PID, still holding fd 9), so there is no polling and killing $HOLDER_PID releases the lock.
# The holder writes the owner note a store would (NOTE, default an engine's; wombatkv waits
# for a note naming another wombatkv command, --lock-wait).
# Returns 0 while held (end with unlock_data_dir); otherwise prints a skip line (no flock(1)) or
# records a failure, and returns 1.
lock_data_dir() {
  local note=${1:-"pid 1 (some-engine) on host test"}
  if ! command -v flock >/dev/null; then
    echo "skip  locked data directory (flock(1) not installed)"
    return 1
  fi
  mkfifo "$TMP/ready"
  (
    exec 9>>"$WMBT_KV_DATA_DIR/LOCK"
    flock -x -n 9 && printf '%s' "$note" >"$WMBT_KV_DATA_DIR/LOCK" && echo ready && exec sleep 300
  ) >"$TMP/ready" &
  HOLDER_PID=$!
  local state
  read -r state <"$TMP/ready"
  rm -f "$TMP/ready"
  if [[ $state != ready ]]; then
    fail "could not take the data directory lock with flock(1)"
    unlock_data_dir
    return 1
  fi
}
unlock_data_dir() {
  kill "$HOLDER_PID" 2>/dev/null
  wait "$HOLDER_PID" 2>/dev/null
  HOLDER_PID=""
}

# help_case "COMMAND WORDS" NEEDLE...: `wombatkv COMMAND WORDS --help` exits 0 and its text has
# every NEEDLE, an "Examples:" section and the exit codes.
help_case() {
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
