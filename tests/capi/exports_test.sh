#!/usr/bin/env bash
# exports_test.sh LIB HEADER — fails if the shared library LIB exports any dynamic symbol that
# does not start with wmbt_kv_, or if its wmbt_kv_* exports differ from the functions HEADER
# (include/wombatkv.h) declares. Prints the exported symbols on success.
set -euo pipefail

if (($# != 2)) || [[ ! -f $1 || ! -f $2 ]]; then
  echo "usage: $0 LIB HEADER" >&2
  exit 2
fi
lib=$1
header=$2

# Defined dynamic symbols, without version suffixes (name@VER / name@@VER).
exported=$(nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u)
if [[ -z $exported ]]; then
  echo "exports: $lib exports nothing" >&2
  exit 1
fi

bad=$(grep -v '^wmbt_kv_' <<<"$exported" || true)
if [[ -n $bad ]]; then
  echo "exports: $lib exports symbols outside the C ABI (all must start with wmbt_kv_):" >&2
  echo "$bad" >&2
  exit 1
fi

# Declared functions: every "wmbt_kv_name(" in the header (types end in _t and are not calls).
declared=$(grep -oE 'wmbt_kv_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u)
if [[ $exported != "$declared" ]]; then
  echo "exports: $lib and $header disagree (< exported only, > declared only):" >&2
  diff <(echo "$exported") <(echo "$declared") >&2 || true
  exit 1
fi

echo "exports: $(wc -l <<<"$exported") symbols, all wmbt_kv_*, all declared in" \
  "$(basename "$header"):"
echo "$exported"
