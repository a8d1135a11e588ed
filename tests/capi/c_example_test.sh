#!/usr/bin/env bash
# examples/c/engine.c runs as its comment says: the first run computes and stores every block, the
# second restores them all (embedded, in a scratch data directory).
set -euo pipefail
engine=$1
dir=$(mktemp -d /tmp/wombatkv-c-example.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export WMBT_KV_DATA_DIR=$dir
unset WMBT_KV_REMOTE_PREFIX WMBT_KV_TCP_ADDR WMBT_KV_HTTP_ADDR
first=$("$engine")
second=$("$engine")
echo "first:  $first"
echo "second: $second"
[[ $first == "restored 0 of 8 blocks, computed 8; stored the chain of 8" ]]
[[ $second == "restored 8 of 8 blocks, computed 0; stored the chain of 8" ]]
