#!/usr/bin/env bash
# buggify_test.sh SIM — the store's buggify points (docs/testing.md) are wired and harmless: with
# buggify on every seed, each point is taken somewhere in a few traced runs (so a point whose hook
# was unwired, or a site renamed without its table row, fails here), and a sweep at a hostile rate
# passes every checker.
set -euo pipefail
sim=$1
sites=(read.cache_miss upload.lost_ok publish.stale_base refresh.reread_head evict.early gc.early
       evict.conflict gc.keep put.gate_small publish.collect_inside save.completion_late)
# save.completion_late is on the completion-form path (SaveChainAsync, PublishChainAsync), which
# at 100 % is never reached (every upload's answer is "lost", so every publish finds blobs it did
# not write and falls back to the blocking path): seeds 8 and 10 draw that path, at 30 %.
taken=$({ for seed in 1 2 3 4 5 6; do
  "$sim" --seed "$seed" --buggify 100 --capacity --verbose | grep -o 'buggify [a-z_.]*' || true
done; for seed in 8 10; do
  "$sim" --seed "$seed" --buggify 30 --capacity --verbose | grep -o 'buggify [a-z_.]*' || true
done; } | sort -u)
for site in "${sites[@]}"; do
  grep -qx "buggify $site" <<<"$taken" || { echo "buggify point $site was never taken" >&2; exit 1; }
done
echo "every buggify point taken: ${sites[*]}"
"$sim" --seeds 1..300 --steps 500 --buggify 50
