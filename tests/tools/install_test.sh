#!/usr/bin/env bash
# install_test.sh BUILD_DIR CC — `cmake --install BUILD_DIR --prefix P` as the README has an
# adopter do it, then what an engine's build and an operator find under P: the header, the
# library, a pkg-config file that points into P, the docs, and a systemd unit whose ExecStart is
# P's wombatkvd. A C program compiled and linked with pkg-config's flags alone runs against the
# installed library. (The configured prefix is never P: that is what this guards.)
#
# Prints one line per check and "N passed, M failed"; exits 1 if anything failed, 2 on bad usage.
set -u

if (($# != 2)); then
  echo "usage: $0 BUILD_DIR CC" >&2
  exit 2
fi
BUILD=$1
CC=$2
# shellcheck source=tests/tools/cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
cli_test_setup install
P=$TMP/prefix

run cmake --install "$BUILD" --prefix "$P"
check_rc "cmake --install --prefix puts everything under the prefix" 0

for f in include/wombatkv.h bin/wombatkv bin/wombatkvd share/doc/wombatkv/configuration.md \
  share/doc/wombatkv/stats.md share/doc/wombatkv/engine.md \
  share/doc/wombatkv/examples/python/wombatkv.py; do
  if [[ -e $P/$f ]]; then pass "installed $f"; else fail "installed $f"; fi
done

UNIT=$P/share/wombatkv/wombatkvd.service
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT" 2>/dev/null | cut -d' ' -f1)
if [[ $EXEC == "$P/bin/wombatkvd" && -x $EXEC ]]; then
  pass "the unit's ExecStart is the prefix's wombatkvd"
else
  fail "the unit's ExecStart is the prefix's wombatkvd" "ExecStart: ${EXEC:-(none)}"
fi

PC=$(find "$P" -name wombatkv.pc | head -n 1)
export PKG_CONFIG_PATH=${PC%/wombatkv.pc}
run pkg-config --cflags --libs wombatkv
FLAGS=$(out)
INCLUDE_DIR=$(grep -o -- '-I[^ ]*' "$TMP/out" | head -n 1)
INCLUDE_DIR=$(realpath -m "${INCLUDE_DIR#-I}")
if [[ $RC == 0 && $INCLUDE_DIR == "$(realpath "$P")/include" && $FLAGS == *-lwombatkv* ]]; then
  pass "pkg-config points into the prefix"
else
  fail "pkg-config points into the prefix" "flags: $FLAGS"
fi

cat >"$TMP/engine.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <wombatkv.h>
int main(int argc, char** argv) {
  if (wmbt_kv_abi_version() != ((WMBT_KV_ABI_VERSION_MAJOR << 16) | WMBT_KV_ABI_VERSION_MINOR)) {
    fprintf(stderr, "the library's ABI is not the header's\n");
    return 1;
  }
  wmbt_kv_handle_t* h = wmbt_kv_open_embedded(argv[1]);
  if (h == NULL) { fprintf(stderr, "open: %s\n", wmbt_kv_last_error()); return 1; }
  char key[65];
  memset(key, 'a', 64);
  key[64] = '\0';
  const char* keys[] = {key};
  const uint8_t bytes[] = "block";
  const uint8_t* payloads[] = {bytes};
  const size_t lens[] = {5};
  size_t matched = 0;
  int ok = wmbt_kv_put_kv_blocks(h, NULL, keys, payloads, lens, 1) == 5 &&
           wmbt_kv_lookup_block_prefix(h, NULL, keys, 1, &matched, NULL, 0) == 0 && matched == 1;
  if (!ok) fprintf(stderr, "put/lookup: %s\n", wmbt_kv_last_error());
  wmbt_kv_free(h);
  (void)argc;
  return ok ? 0 : 1;
}
C
# shellcheck disable=SC2086 # FLAGS is a list of words
run "$CC" -std=c11 -Wall -Werror -o "$TMP/engine" "$TMP/engine.c" $FLAGS \
  "-Wl,-rpath,${PC%/pkgconfig/wombatkv.pc}"
check_rc "a C engine builds with pkg-config's flags alone" 0
run "$TMP/engine" "$TMP/engine-data"
check_rc "it runs against the installed library (put, lookup)" 0
LIB=$(find "$P" -name 'libwombatkv.so' | head -n 1)
run env WOMBATKV_LIB="$LIB" python3 "$P/share/doc/wombatkv/examples/python/restore_prefix.py" \
  --data-dir "$TMP/python-data"
check_out "the installed Python example runs against the installed library" 0 \
  "after reopening: 11 blocks restored, 0 prefilled"

cli_test_summary
