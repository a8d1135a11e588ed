#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, docs/fuzzing.md) with clang-14 into ./build-fuzz (or
# $WOMBATKV_FUZZ_BUILD_DIR) and runs each for SECONDS (default 10) on a scratch copy of its seed
# corpus in fuzz/corpus/<target>/. Exits non-zero if any target crashes, leaks, hits UB or breaks
# a property, or if the seeds fuzz/make_corpus.cc writes differ from fuzz/corpus/; crashing inputs
# are kept in <build>/artifacts/<target>/.
# Usage: scripts/fuzz.sh [seconds-per-target] [target...]      e.g. scripts/fuzz.sh 600
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-10}"
shift || true
build="${WOMBATKV_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="$(nproc 2>/dev/null || echo 2)"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=()
  for f in "$root"/fuzz/fuzz_*.cc; do targets+=("$(basename "$f" .cc)"); done
fi

cc="${WOMBATKV_FUZZ_CC:-clang-14}"
cxx="${WOMBATKV_FUZZ_CXX:-clang++-14}"
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# -O1 and line tables build faster than -O2 -g (103 s vs ~125 s); no NDEBUG: WMBT_DCHECKs run too.
opt="-O1 -gline-tables-only"
start=$SECONDS
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DWOMBATKV_FUZZ=ON -DWOMBATKV_TESTS=OFF -DWOMBATKV_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]}" wombatkv_fuzz_make_corpus
echo "fuzz: built ${#targets[@]} targets in $((SECONDS - start)) s"

# The seeds fuzz/make_corpus.cc writes must be the checked-in ones: an encoding that changed
# without them would leave the fuzzers starting from stale inputs.
fresh="$build/corpus-fresh"
rm -rf "$fresh"
"$build/fuzz/wombatkv_fuzz_make_corpus" "$fresh"
stale=()
while IFS= read -r f; do
  rel="${f#"$fresh"/}"
  cmp -s "$f" "$root/fuzz/corpus/$rel" || stale+=("$rel")
done < <(find "$fresh" -type f | sort)
if [ ${#stale[@]} -gt 0 ]; then
  echo "fuzz: FAIL the seed corpus is stale: ${stale[*]}"
  echo "  regenerate: copy those files from $fresh into fuzz/corpus/ (docs/fuzzing.md)"
  exit 1
fi

passed=0
failed=0
failed_names=()
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for t in "${targets[@]}"; do
  work="$build/corpus-run/$t"
  artifacts="$build/artifacts/$t"
  rm -rf "$work"
  mkdir -p "$work" "$artifacts"
  if [ -d "$root/fuzz/corpus/$t" ]; then cp -r "$root/fuzz/corpus/$t/." "$work/"; fi
  log="$build/$t.log"
  # -jobs/-workers stay 1: two cores, and the targets run one after another.
  if "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" >"$log" 2>&1; then
    passed=$((passed + 1))
    stats="$(grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec' "$log" |
             sed 's/stat:://' | tr '\n' ' ')"
    cov="$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)"
    echo "fuzz: PASS $t ($seconds s; $cov; $stats)"
  else
    failed=$((failed + 1))
    failed_names+=("$t")
    echo "fuzz: FAIL $t — log $log, inputs in $artifacts/ (reproduce: $build/fuzz/$t <input>)"
    grep -E 'ERROR|fuzz property violated|SUMMARY|runtime error' "$log" | head -5 || true
  fi
done
echo "fuzz: $passed passed, $failed failed (total $((SECONDS - start)) s)"
[ "$failed" -eq 0 ]
