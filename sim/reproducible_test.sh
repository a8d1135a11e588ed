#!/usr/bin/env bash
# reproducible_test.sh SIM — the same seed twice must print the same trace digest (and different
# seeds different ones: a digest that ignores the trace would pass the first check vacuously).
set -euo pipefail
sim=$1
digest() { "$sim" --seed "$1" --steps 300 | awk '/^digest/ {print $2}'; }
sweep() { "$sim" --seeds 100..140 --steps 200 | awk '/^digest/ {print $2}'; }
for seed in 7 42 1234; do
  a=$(digest $seed)
  b=$(digest $seed)
  [[ -n $a && $a == "$b" ]] || { echo "seed $seed: digests differ: '$a' vs '$b'" >&2; exit 1; }
  echo "seed $seed: digest $a twice"
done
# A seed's run must not depend on the seeds run before it in the same process.
[[ $(sweep) == $(sweep) ]] || { echo "sweep 100..140: digests differ" >&2; exit 1; }
single=$("$sim" --seed 120 --steps 200 | awk '/^digest/ {print $2}')
inside=$("$sim" --seeds 110..120 --steps 200 >/dev/null; "$sim" --seed 120 --steps 200 | awk '/^digest/ {print $2}')
[[ $single == "$inside" ]] || { echo "seed 120 differs between runs" >&2; exit 1; }
[[ $(digest 7) != $(digest 8) ]] || { echo "seeds 7 and 8 have the same digest" >&2; exit 1; }
