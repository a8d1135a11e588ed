#!/usr/bin/env bash
# crash_test.sh — real-process crash harness (issue 5; docs/crash-testing.md).
#
#   crash_test.sh --writer BIN [--daemon WOMBATKVD] [--cycles N] [--s3-cycles M] [--seed S] [--keep]
#
# For N cycles (default 100): start `BIN` (tests/crash/crash_writer) in the background on one data
# directory (local-directory L2), let it run a random 20–300 ms, SIGKILL it, then run
# `BIN --verify`, which checks every acknowledged publish in the writer's log against the reopened
# store (G3 durable after ack, G4 not-acked invisible, G9 integrity). The writer continues on the
# same data directory every cycle, so each cycle also exercises restart recovery.
#
# With --daemon, each cycle starts WOMBATKVD on the data directory, runs the writer as its TCP
# client (`BIN --tcp`), and SIGKILLs the daemon instead of the writer (the writer then exits 4,
# "lost the daemon"); --verify then reopens the data directory itself (issue 4's crash test).
#
# If WOMBATKV_TEST_S3_ENDPOINT/_BUCKET/_ACCESS_KEY/_SECRET_KEY are set (scripts/s3-server.sh env),
# a second series of M cycles (default N/4, at least 5) runs with S3 as L2 under a fresh prefix.
#
# Randomness: bash $RANDOM seeded by --seed (default: random, printed), so a run is repeated with
# the same --seed (kill moments still depend on the machine's speed). Assertions are about states
# only, never timing. Prints "N passed, M failed"; exit 0 all passed, 1 a failure, 2 bad usage.
set -u

WRITER="" DAEMON="" CYCLES=100 S3_CYCLES="" SEED="" KEEP=0
while (($#)); do
  case $1 in
    --writer) WRITER=$2; shift 2 ;;
    --daemon) DAEMON=$2; shift 2 ;;
    --cycles) CYCLES=$2; shift 2 ;;
    --s3-cycles) S3_CYCLES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "usage: $0 --writer BIN [--cycles N] [--s3-cycles M] [--seed S] [--keep]" >&2; exit 2 ;;
  esac
done
if [[ -z $WRITER || ! -x $WRITER ]]; then
  echo "crash_test: --writer must name the crash_writer executable" >&2
  exit 2
fi
[[ -n $SEED ]] || SEED=$(( $(od -An -N2 -tu2 /dev/urandom) ))
RANDOM=$SEED
[[ -n $S3_CYCLES ]] || S3_CYCLES=$(( CYCLES / 4 > 5 ? CYCLES / 4 : 5 ))
echo "crash_test: seed $SEED, $CYCLES cycles (repeat: $0 --writer $WRITER${DAEMON:+ --daemon $DAEMON} --cycles $CYCLES --seed $SEED)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/wombatkv-crash-test.XXXXXX")
WPID="" DPID=""
cleanup() {
  if [[ -n $WPID ]]; then kill -9 "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null; fi
  if [[ -n $DPID ]]; then kill -9 "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; fi
  if ((KEEP)); then echo "crash_test: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# Only what each series sets comes from the environment.
while IFS='=' read -r name _; do
  [[ $name == WMBT_KV_* || $name == AWS_* ]] && unset "$name"
done < <(env)

PASSED=0
FAILED=0
START_SECONDS=$SECONDS

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# daemon_cycle DIR I MS: the daemon on DIR/data with the writer as its client; SIGKILL the daemon
# after MS ms; the writer must then stop by itself with 4 (lost the daemon) or 0.
daemon_cycle() {
  local dir=$1 i=$2 ms=$3 addr rc ready=0
  addr=127.0.0.1:$(free_port)
  "$DAEMON" --data-dir "$dir/data" --tcp "$addr" --log-level warn >>"$dir/daemon.out" 2>&1 &
  DPID=$!
  for _ in $(seq 1 400); do
    if (exec 3<>"/dev/tcp/${addr%:*}/${addr#*:}") 2>/dev/null; then ready=1; break; fi
    kill -0 "$DPID" 2>/dev/null || break
    sleep 0.05
  done
  if ((ready == 0)); then
    echo "FAIL  daemon cycle $i (seed $SEED): wombatkvd did not start:"; tail -5 "$dir/daemon.out"
    return 1
  fi
  "$WRITER" --tcp "$addr" --log "$dir/ack.log" --seed "$(( SEED * 100003 + i ))" \
    >>"$dir/writer.out" 2>&1 &
  WPID=$!
  sleep "$(printf '0.%03d' "$ms")"
  kill -9 "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=""
  for _ in $(seq 1 200); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$WPID" 2>/dev/null; then
    echo "FAIL  daemon cycle $i (seed $SEED): the writer hung for 10 s after its daemon died"
    kill -9 "$WPID"; wait "$WPID" 2>/dev/null; WPID=""
    return 1
  fi
  wait "$WPID"; rc=$?; WPID=""
  if ((rc != 0 && rc != 4)); then
    echo "FAIL  daemon cycle $i (seed $SEED): writer exited $rc:"; tail -5 "$dir/writer.out"
    return 1
  fi
}

# series NAME CYCLES: runs the kill/verify cycles on $TMP/NAME.
series() {
  local name=$1 cycles=$2 dir=$TMP/$1 i ms rc
  mkdir -p "$dir"
  for ((i = 1; i <= cycles; i++)); do
    ms=$(( 20 + RANDOM % 281 ))
    if [[ -n $DAEMON ]]; then
      daemon_cycle "$dir" "$i" "$ms" || { FAILED=$((FAILED + 1)); return 1; }
    else
    "$WRITER" --data-dir "$dir/data" --log "$dir/ack.log" --seed "$(( SEED * 100003 + i ))" \
      >>"$dir/writer.out" 2>&1 &
    WPID=$!
    sleep "$(printf '0.%03d' "$ms")"
    if kill -9 "$WPID" 2>/dev/null; then
      wait "$WPID" 2>/dev/null
    else
      wait "$WPID"; rc=$?
      if ((rc != 0)); then  # the writer stopped by itself: an error it could not survive
        echo "FAIL  $name cycle $i (seed $SEED): writer exited $rc before the kill:"
        tail -5 "$dir/writer.out"
        FAILED=$((FAILED + 1)); WPID=""; return 1
      fi
    fi
    WPID=""
    fi
    if "$WRITER" --data-dir "$dir/data" --log "$dir/ack.log" --verify >"$dir/verify.out" 2>&1; then
      PASSED=$((PASSED + 1))
      echo "ok    $name cycle $i: killed after ${ms} ms; $(grep '^verify:' "$dir/verify.out" | tail -1)"
    else
      FAILED=$((FAILED + 1))
      echo "FAIL  $name cycle $i (seed $SEED): killed after ${ms} ms; verify said:"
      head -20 "$dir/verify.out"
      cp -r "$dir" "$TMP/failed-$name-$i" 2>/dev/null
      KEEP=1
      return 1
    fi
  done
}

if [[ -n $DAEMON ]]; then series daemon-local "$CYCLES"; else series local "$CYCLES"; fi

if ((FAILED == 0)) && [[ -n ${WOMBATKV_TEST_S3_ENDPOINT:-} && -n ${WOMBATKV_TEST_S3_BUCKET:-} ]]; then
  echo "crash_test: S3 series on $WOMBATKV_TEST_S3_ENDPOINT bucket $WOMBATKV_TEST_S3_BUCKET, $S3_CYCLES cycles"
  export WMBT_KV_BUCKET=$WOMBATKV_TEST_S3_BUCKET
  export WMBT_KV_S3_ENDPOINT=$WOMBATKV_TEST_S3_ENDPOINT
  export WMBT_KV_S3_REGION=${WOMBATKV_TEST_S3_REGION:-us-east-1}
  [[ -n ${WOMBATKV_TEST_S3_ACCESS_KEY:-} ]] && export WMBT_KV_S3_ACCESS_KEY=$WOMBATKV_TEST_S3_ACCESS_KEY
  [[ -n ${WOMBATKV_TEST_S3_SECRET_KEY:-} ]] && export WMBT_KV_S3_SECRET_KEY=$WOMBATKV_TEST_S3_SECRET_KEY
  export WMBT_KV_S3_PREFIX="crash-test/$SEED-$$-$(basename "$TMP")"
  if [[ -n $DAEMON ]]; then series daemon-s3 "$S3_CYCLES"; else series s3 "$S3_CYCLES"; fi
else
  ((FAILED == 0)) && echo "crash_test: WOMBATKV_TEST_S3_ENDPOINT unset: S3 series skipped"
fi

echo "crash_test: seed $SEED, $((SECONDS - START_SECONDS)) s"
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
