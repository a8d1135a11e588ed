#!/usr/bin/env bash
# Instructions the daemon executes per operation, counted by callgrind: a figure that does not
# move with a noisy machine, for comparing two builds of wombatkvd where timed runs cannot
# (BENCHMARKS.md, "Session 20"). Not a time: cache misses, syscalls and context switches are
# not in it.
#
# It runs build/bench/daemon_bench against wombatkvd under callgrind, zeroes the counters once
# the load is steady, counts for a window, and divides the instructions of that window by the
# calls of one function (by default StoreImpl::SaveChainAsync: one per save).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/instructions-per-op.sh [options] [-- daemon_bench options]

  --wombatkvd PATH   the daemon to measure (default build/tools/wombatkvd)
  --bench PATH       daemon_bench (default build/bench/daemon_bench)
  --per NAME         count calls of the function whose name starts with NAME
                     (default "wombatkv::StoreImpl::SaveChainAsync(")
  --warmup S         seconds of load before counting (default 5)
  --window S         seconds counted (default 6)
  --top N            also print the N functions with the most instructions per call, inclusive
  -h, --help         this text

daemon_bench options default to: --modes shm --ops put --sizes 1K --clients 8
Needs valgrind (apt-get install valgrind). Prints, e.g.:
  2512 calls, 178893362 instructions: 71215 instructions per call
EOF
}

kvd=build/tools/wombatkvd
bench=build/bench/daemon_bench
per='wombatkv::StoreImpl::SaveChainAsync('
warmup=5
window=6
top=0
while [ $# -gt 0 ]; do
  case "$1" in
    --wombatkvd) kvd=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --per) per=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "instructions-per-op: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(--modes shm --ops put --sizes 1K --clients 8)
die() {
  echo "instructions-per-op: $*" >&2
  exit 1
}
command -v valgrind >/dev/null || die "valgrind is missing: apt-get install valgrind"
for f in "$kvd" "$bench"; do
  [ -x "$f" ] || die "$f is not built: run scripts/build.sh"
done

work=$(mktemp -d /var/tmp/wombatkv-iop.XXXXXX)
trap 'rm -rf "$work"' EXIT
kvd=$(realpath "$kvd")
cat >"$work/kvd" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file=$work/cg.%p "$kvd" "\$@"
EOF
chmod +x "$work/kvd"

seconds=$((warmup + window + 10))
"$bench" --wombatkvd "$work/kvd" --seconds "$seconds" --dir "$work/data" "${bench_args[@]}" \
  >"$work/bench.txt" 2>&1 &
bench_pid=$!
pid=""
for _ in $(seq 120); do
  pid=$(pgrep -f "callgrind.*--data-dir $work/data" | head -1 || true)
  [ -n "$pid" ] && break
  sleep 0.5
done
[ -n "$pid" ] || die "the daemon did not start: $(tail -5 "$work/bench.txt")"
echo "counting: ${warmup}s of load, then a ${window}s window (daemon pid $pid) ..." >&2
sleep "$warmup"
callgrind_control -z "$pid" >/dev/null 2>&1
sleep "$window"
callgrind_control -d "$pid" >/dev/null 2>&1
wait "$bench_pid" || die "daemon_bench failed: $(tail -5 "$work/bench.txt")"
dump=$(ls "$work"/cg.*.1 2>/dev/null | head -1)
[ -n "$dump" ] || die "no callgrind dump"

# The dump names a function once as "(id) name" and later as "(id)"; "calls=N" follows each
# call's "cfn=" line.
read -r calls total < <(awk -v per="$per" '
  /^c?fn=\(/ {
    id = $0; sub(/^c?fn=\(/, "", id); name = id; sub(/\).*/, "", id)
    if (sub(/^[0-9]+\) /, "", name)) names[id] = name
    if ($0 ~ /^cfn=/) callee = id
    next
  }
  /^calls=/ { split(substr($0, 7), a, " "); n[callee] += a[1]; next }
  /^(summary|totals):/ { total = $2 }
  END {
    c = 0
    for (id in n) if (index(names[id], per) == 1) c += n[id]
    print c, total
  }' "$dump")
[ "$calls" -gt 0 ] || die "no calls of $per in the window"
echo "$calls calls, $total instructions: $((total / calls)) instructions per call"
if [ "$top" -gt 0 ]; then
  callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | sed -n '/file:function/,$p' |
    tail -n +3 | head -n "$top" | awk -v c="$calls" '{ x = $1; gsub(",", "", x); $1 = ""; $2 = "";
      printf "%9d %s\n", x / c, substr($0, 1, 150) }'
fi
