/* A minimal engine loop over the WombatKV C ABI: look up the cached prefix of a prompt's blocks,
 * restore the blocks that hit (zero-copy borrows), "compute" the rest and store the whole chain.
 * The store is chosen by the environment (wmbt_kv_init_from_env): embedded in WMBT_KV_DATA_DIR
 * (default ~/.wombatkv), or a wombatkvd daemon with WMBT_KV_REMOTE_PREFIX / WMBT_KV_TCP_ADDR.
 * Run it twice: the second run restores every block the first stored.
 *
 *   cc examples/c/engine.c $(pkg-config --cflags --libs wombatkv) -o engine && ./engine
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wombatkv.h>

enum { kBlocks = 8, kBlockBytes = 64 * 1024 };

/* A block's key: 64 hex digits derived (here, made up) from the tokens of the prefix up to it. */
static void BlockKey(int i, char out[WMBT_KV_KEY_HEX_BUF]) {
  snprintf(out, WMBT_KV_KEY_HEX_BUF, "%064x", 0x5eed0000 + i);
}

/* Stands in for the engine's prefill of block i. */
static void ComputeBlock(int i, uint8_t* out) {
  for (size_t j = 0; j < kBlockBytes; ++j) out[j] = (uint8_t)(i * 31 + j);
}

static int Fail(const char* what) {
  fprintf(stderr, "engine: %s: %s\n", what, wmbt_kv_last_error());
  return 1;
}

int main(void) {
  wmbt_kv_handle_t* kv = wmbt_kv_init_from_env();
  if (kv == NULL) return Fail("open");
  const char* ns = "example";
  char keys[kBlocks][WMBT_KV_KEY_HEX_BUF];
  const char* key_ptrs[kBlocks];
  for (int i = 0; i < kBlocks; ++i) {
    BlockKey(i, keys[i]);
    key_ptrs[i] = keys[i];
  }

  char err[256];
  size_t hit = 0;
  if (wmbt_kv_lookup_block_prefix(kv, ns, key_ptrs, kBlocks, &hit, err, sizeof err) != 0) {
    fprintf(stderr, "engine: lookup: %s\n", err);
    wmbt_kv_free(kv);
    return 1;
  }

  static uint8_t blocks[kBlocks][kBlockBytes];
  const uint8_t** restored = NULL;
  const size_t* lens = NULL;
  wmbt_kv_borrow_t* borrow = NULL;
  if (hit > 0) {
    int32_t got = wmbt_kv_get_kv_blocks_borrowed(kv, ns, key_ptrs, hit, &restored, &lens, &borrow);
    if (got < 0) return Fail("get");
    if (got == 0) hit = 0; /* gone since the lookup (evicted): recompute */
  }
  for (size_t i = 0; i < hit; ++i) {
    memcpy(blocks[i], restored[i], lens[i]); /* an engine copies into its GPU cache here */
  }
  wmbt_kv_release_borrow(borrow);
  for (size_t i = hit; i < kBlocks; ++i) ComputeBlock((int)i, blocks[i]);

  /* The whole prefix, so the chain starts at its real root; stored blocks are not sent twice. */
  const uint8_t* payloads[kBlocks];
  size_t sizes[kBlocks];
  for (int i = 0; i < kBlocks; ++i) {
    payloads[i] = blocks[i];
    sizes[i] = kBlockBytes;
  }
  if (wmbt_kv_put_kv_blocks(kv, ns, key_ptrs, payloads, sizes, kBlocks) < 0) return Fail("put");

  for (size_t i = 0; i < hit; ++i) {
    uint8_t expected[kBlockBytes];
    ComputeBlock((int)i, expected);
    if (memcmp(expected, blocks[i], kBlockBytes) != 0) {
      fprintf(stderr, "engine: block %zu restored with the wrong bytes\n", i);
      return 1;
    }
  }
  printf("restored %zu of %d blocks, computed %zu; stored the chain of %d\n", hit, kBlocks,
         (size_t)kBlocks - hit, kBlocks);
  wmbt_kv_free(kv);
  return 0;
}
