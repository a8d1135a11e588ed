#!/usr/bin/env bash
# shrink_test.sh SIM — a guarantee broken on purpose (--break publish-order: heads published
# before their blocks are durable) must be caught, and the shrinker must print a shorter run that
# still fails the same guarantee and reproduces from its printed command line alone.
set -euo pipefail
sim=$1
guarantee() { awk -F': ' '/^FAIL seed/ {sub(/ violated$/, "", $2); print $2; exit}'; }
check() {
  local seed=$1; shift
  "$sim" --seed "$seed" --steps 500 "$@" >/dev/null ||
    { echo "seed $seed $*: fails without the break" >&2; exit 1; }
  local out rc=0
  out=$("$sim" --seed "$seed" --steps 500 --break publish-order "$@") || rc=$?
  [[ $rc == 1 ]] || { echo "seed $seed $*: the broken store was not caught (exit $rc)" >&2; exit 1; }
  local g events shrunk cmd
  g=$(guarantee <<<"$out")
  read -r events shrunk < <(sed -nE 's/^shrunk \([0-9]+ runs\): ([0-9]+) events -> ([0-9]+) events.*/\1 \2/p' <<<"$out")
  [[ -n $events && -n $shrunk ]] || { echo "seed $seed: no shrunk run printed" >&2; exit 1; }
  (( shrunk < events )) || { echo "seed $seed: shrunk trace not shorter ($shrunk >= $events)" >&2; exit 1; }
  [[ $(grep -c '^  t=' <<<"$(sed -n '/^shrunk trace/,/^shrunk reproduce/p' <<<"$out")") == "$shrunk" ]] ||
    { echo "seed $seed: the shrunk trace printed is not whole" >&2; exit 1; }
  cmd=$(sed -nE 's/^shrunk reproduce: wombatkv-sim (.*) --verbose$/\1/p' <<<"$out")
  rc=0
  out=$("$sim" $cmd --no-shrink) || rc=$?
  [[ $rc == 1 && $(guarantee <<<"$out") == "$g" ]] ||
    { echo "seed $seed: '$cmd' does not fail $g again (exit $rc)" >&2; exit 1; }
  echo "seed $seed $*: $g caught; $events events shrunk to $shrunk: $cmd"
}
check 4 --no-l2-invariants   # judged only by what the API returns
check 8 --no-l2-invariants
check 9                      # with the L2 invariant at every head write
