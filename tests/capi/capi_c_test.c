/* capi_c_test.c — exercises every entry point of include/wombatkv.h from plain C (compiled as
 * C11 with -pedantic), against a store in a fresh temporary directory: embedded, or wombatkvd over
 * shared memory or TCP (WOMBATKV_TEST_MODE; see open_store). The same code runs in every mode.
 * Prints "N passed, M failed" and exits non-zero if anything failed. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, setenv */

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wombatkv.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    if (cond) {                                                                           \
      g_passed++;                                                                         \
    } else {                                                                              \
      g_failed++;                                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last_error: \"%s\")\n", __FILE__, __LINE__, \
              #cond, wmbt_kv_last_error());                                               \
    }                                                                                     \
  } while (0)

/* Fails the check and leaves the test function: for steps later steps depend on. */
#define REQUIRE(cond)    \
  do {                   \
    int ok_ = !!(cond);  \
    CHECK(ok_);          \
    if (!ok_) return;    \
  } while (0)

#define NO_ERROR() CHECK(wmbt_kv_last_error()[0] == '\0')
#define HAS_ERROR() CHECK(wmbt_kv_last_error()[0] != '\0')

static char g_root[256];

/* A distinct 64-hex key per seed: "<seed as 2 hex digits>" repeated. */
static void make_key(char out[WMBT_KV_KEY_HEX_BUF], unsigned seed) {
  int i;
  for (i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", (seed * 31u + (unsigned)i) & 0xffu);
  out[64] = '\0';
}

static const uint8_t* bytes_of(const char* s) { return (const uint8_t*)s; }

static void subdir(char* out, size_t len, const char* name) {
  snprintf(out, len, "%s/%s", g_root, name);
}

/* The store under test, selected by WOMBATKV_TEST_MODE: unset or "embedded" opens the embedded
 * store in `dir`. "shm" and "tcp" run `$WOMBATKV_TEST_DAEMON_CTL start <dir>`, which (re)starts
 * wombatkvd on data directory `dir` and prints the client's environment as NAME=value lines, then
 * open through wmbt_kv_init_from_env exactly as an engine would. Reopening a directory therefore
 * restarts the daemon: "restart" in these tests (the seed's step 7) is a real daemon restart. */
static int daemon_mode(void) {
  const char* mode = getenv("WOMBATKV_TEST_MODE");
  return mode != NULL && *mode != '\0' && strcmp(mode, "embedded") != 0;
}

static void daemon_ctl(const char* verb, const char* dir, char names[][64], int* count) {
  char cmd[1024], line[512];
  FILE* out;
  *count = 0;
  snprintf(cmd, sizeof cmd, "%s %s %s", getenv("WOMBATKV_TEST_DAEMON_CTL"), verb, dir ? dir : "");
  out = popen(cmd, "r");
  if (out == NULL) return;
  while (fgets(line, sizeof line, out) != NULL) {
    char* eq = strchr(line, '=');
    line[strcspn(line, "\n")] = '\0';
    if (eq == NULL || *count >= 4) continue;
    *eq = '\0';
    setenv(line, eq + 1, 1);
    snprintf(names[(*count)++], 64, "%.63s", line);
  }
  if (pclose(out) != 0) fprintf(stderr, "daemon control failed: %s\n", cmd);
}

static wmbt_kv_handle_t* open_store(const char* dir) {
  char names[4][64];
  int count, i;
  wmbt_kv_handle_t* h;
  if (!daemon_mode()) return wmbt_kv_open_embedded(dir);
  daemon_ctl("start", dir, names, &count);
  h = wmbt_kv_init_from_env();
  for (i = 0; i < count; i++) unsetenv(names[i]); /* other tests set transports themselves */
  return h;
}

static void stop_daemon(void) {
  char names[4][64];
  int count;
  if (daemon_mode()) daemon_ctl("stop", NULL, names, &count);
}

static int remove_entry(const char* path, const struct stat* sb, int flag, struct FTW* ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void test_abi_version(void) {
  uint32_t v = wmbt_kv_abi_version();
  CHECK(v == 0x00010005u);
  CHECK(v == WMBT_KV_ABI_VERSION);
  CHECK((v >> 16) == WMBT_KV_ABI_VERSION_MAJOR);
  CHECK((v & 0xffffu) == WMBT_KV_ABI_VERSION_MINOR);
}

static void test_blake3(void) {
  char out[WMBT_KV_KEY_HEX_BUF];
  CHECK(wmbt_kv_blake3_64hex(bytes_of(""), 0, out) == 0);
  CHECK(strcmp(out, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262") == 0);
  CHECK(wmbt_kv_blake3_64hex(NULL, 0, out) == 0); /* NULL input is fine when empty */
  CHECK(strcmp(out, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262") == 0);
  CHECK(wmbt_kv_blake3_64hex(bytes_of("abc"), 3, out) == 0);
  CHECK(strcmp(out, "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85") == 0);
  NO_ERROR();
  CHECK(wmbt_kv_blake3_64hex(bytes_of("abc"), 3, NULL) == -1);
  HAS_ERROR();
  CHECK(wmbt_kv_blake3_64hex(NULL, 3, out) == -1);
  HAS_ERROR();
  CHECK(wmbt_kv_blake3_64hex(bytes_of("abc"), 3, out) == 0);
  NO_ERROR(); /* cleared by the next good call */
}

static void test_crc32c(void) {
  const uint8_t* d = bytes_of("123456789");
  uint32_t crc;
  CHECK(wmbt_kv_crc32c(d, 9) == 0xE3069283u);
  CHECK(wmbt_kv_crc32c(NULL, 0) == 0u);
  CHECK(wmbt_kv_crc32c_append(0, d, 9) == 0xE3069283u);
  crc = wmbt_kv_crc32c_append(0, d, 4);
  crc = wmbt_kv_crc32c_append(crc, d + 4, 0);
  crc = wmbt_kv_crc32c_append(crc, d + 4, 3);
  crc = wmbt_kv_crc32c_append(crc, d + 7, 2);
  CHECK(crc == 0xE3069283u);
  NO_ERROR();
  CHECK(wmbt_kv_crc32c(NULL, 5) == 0u);
  HAS_ERROR();
  CHECK(wmbt_kv_crc32c_append(7u, NULL, 5) == 7u);
  HAS_ERROR();
  CHECK(wmbt_kv_crc32c(d, 9) == 0xE3069283u);
  NO_ERROR();
}

static void test_backend_selection(void) {
  char dir[512];
  wmbt_kv_handle_t* h;
  /* No daemon serves these: each fails naming the setting it tried, in precedence order. */
  setenv("WMBT_KV_REMOTE_PREFIX", "wkv-test-nobody", 1);
  setenv("WMBT_KV_TCP_ADDR", "127.0.0.1:1", 1);
  CHECK(wmbt_kv_init_from_env() == NULL); /* shared memory wins */
  CHECK(strstr(wmbt_kv_last_error(), "WMBT_KV_REMOTE_PREFIX=wkv-test-nobody") != NULL);
  CHECK(strstr(wmbt_kv_last_error(), "connecting to wombatkvd") != NULL);
  unsetenv("WMBT_KV_REMOTE_PREFIX");
  CHECK(wmbt_kv_init_from_env() == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "WMBT_KV_TCP_ADDR=127.0.0.1:1") != NULL);
  CHECK(strstr(wmbt_kv_last_error(), "connecting to wombatkvd") != NULL);
  CHECK(wmbt_kv_last_error_code() == WMBT_KV_ERR_UNAVAILABLE);
  unsetenv("WMBT_KV_TCP_ADDR");
  setenv("WMBT_KV_HTTP_ADDR", "127.0.0.1:8080", 1);
  CHECK(wmbt_kv_init_from_env() == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "127.0.0.1:8080") != NULL);
  CHECK(strstr(wmbt_kv_last_error(), "not supported") != NULL);
  CHECK(wmbt_kv_last_error_code() == WMBT_KV_ERR_FAILED_PRECONDITION);
  unsetenv("WMBT_KV_HTTP_ADDR");

  setenv("WMBT_KV_CACHE_BYTES", "lots", 1);
  CHECK(wmbt_kv_init_from_env() == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "WMBT_KV_CACHE_BYTES") != NULL);
  unsetenv("WMBT_KV_CACHE_BYTES");

  subdir(dir, sizeof dir, "from-env");
  setenv("WMBT_KV_DATA_DIR", dir, 1);
  h = wmbt_kv_init_from_env(); /* nothing else set: embedded under WMBT_KV_DATA_DIR */
  CHECK(h != NULL);
  NO_ERROR();
  wmbt_kv_free(h);
  unsetenv("WMBT_KV_DATA_DIR");
  CHECK(access(dir, F_OK) == 0);

  CHECK(wmbt_kv_open_tcp("127.0.0.1:1") == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "connecting to wombatkvd (WMBT_KV_TCP_ADDR=127.0.0.1:1)") != NULL);
  CHECK(wmbt_kv_open_tcp("no-port") == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "HOST:PORT") != NULL);
  /* The error names the argument, not a variable. */
  CHECK(strstr(wmbt_kv_last_error(), "addr \"no-port\"") != NULL);
  CHECK(wmbt_kv_open_tcp("") == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "addr is empty") != NULL);
  CHECK(wmbt_kv_open_tcp(NULL) == NULL);
  HAS_ERROR();
  CHECK(wmbt_kv_open_http("127.0.0.1:8080") == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "not supported") != NULL);

  wmbt_kv_free(NULL); /* no-ops that cannot fail: they leave the error to be read (1.3) */
  wmbt_kv_release_borrow(NULL);
  CHECK(strstr(wmbt_kv_last_error(), "not supported") != NULL);
}

/* SPEC G3 / seed/consistency.md "What the engine should assume", steps 1-8, through the 1.0
 * ABI. put_kv_blocks([A, B]) is steps 1-3 (B's parent is A; the publish is implicit). */
static void test_seed_example(void) {
  char dir[512], a[WMBT_KV_KEY_HEX_BUF], b[WMBT_KV_KEY_HEX_BUF];
  const char* keys[2];
  const uint8_t* payloads[2];
  size_t lens[2];
  size_t matched = 99;
  const uint8_t** ptrs = NULL;
  const size_t* plens = NULL;
  wmbt_kv_borrow_t* borrow = NULL;
  wmbt_kv_handle_t* h;

  subdir(dir, sizeof dir, "seed");
  h = open_store(dir);
  REQUIRE(h != NULL);
  make_key(a, 1);
  make_key(b, 2);
  keys[0] = a;
  keys[1] = b;
  payloads[0] = bytes_of("block A bytes");
  payloads[1] = bytes_of("block B, longer bytes");
  lens[0] = strlen("block A bytes");
  lens[1] = strlen("block B, longer bytes");

  /* 1-3: put A, put B with parent A, publish. */
  CHECK(wmbt_kv_put_kv_blocks(h, "default", keys, payloads, lens, 2) ==
        (int64_t)(lens[0] + lens[1]));
  NO_ERROR();
  /* 4: get A. */
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys, 1, &ptrs, &plens, &borrow) == 1);
  REQUIRE(borrow != NULL);
  CHECK(plens[0] == lens[0] && memcmp(ptrs[0], payloads[0], lens[0]) == 0);
  wmbt_kv_release_borrow(borrow);
  /* 5: get B, by its key alone. */
  borrow = NULL;
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys + 1, 1, &ptrs, &plens, &borrow) == 1);
  REQUIRE(borrow != NULL);
  CHECK(plens[0] == lens[1] && memcmp(ptrs[0], payloads[1], lens[1]) == 0);
  wmbt_kv_release_borrow(borrow);
  /* ... and by its path A, B. */
  borrow = NULL;
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys, 2, &ptrs, &plens, &borrow) == 1);
  REQUIRE(borrow != NULL);
  CHECK(plens[1] == lens[1] && memcmp(ptrs[1], payloads[1], lens[1]) == 0);
  CHECK(plens[0] == lens[0] && memcmp(ptrs[0], payloads[0], lens[0]) == 0);
  wmbt_kv_release_borrow(borrow);
  /* 6: lookup returns 2. */
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, 2, &matched, NULL, 0) == 0);
  CHECK(matched == 2);
  /* 7: restart. */
  wmbt_kv_free(h);
  h = open_store(dir);
  REQUIRE(h != NULL);
  /* 8: lookup returns 2, and the bytes are still there. */
  matched = 99;
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, 2, &matched, NULL, 0) == 0);
  CHECK(matched == 2);
  borrow = NULL;
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys, 2, &ptrs, &plens, &borrow) == 1);
  REQUIRE(borrow != NULL);
  CHECK(plens[1] == lens[1] && memcmp(ptrs[1], payloads[1], lens[1]) == 0);
  wmbt_kv_release_borrow(borrow);
  borrow = NULL;
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys + 1, 1, &ptrs, &plens, &borrow) == 1);
  REQUIRE(borrow != NULL);
  CHECK(plens[0] == lens[1] && memcmp(ptrs[0], payloads[1], lens[1]) == 0);
  wmbt_kv_release_borrow(borrow);
  wmbt_kv_free(h);
}

static void test_blocks_raw_tail_and_namespaces(void) {
  char dir[512], k[3][WMBT_KV_KEY_HEX_BUF], missing[WMBT_KV_KEY_HEX_BUF], err[256];
  const char* keys[3];
  const uint8_t* payloads[3];
  size_t lens[3] = {3, 0, 5};
  size_t matched = 99;
  const uint8_t** ptrs = NULL;
  const size_t* plens = NULL;
  const uint8_t* tail = NULL;
  size_t tail_len = 0;
  wmbt_kv_borrow_t* borrow = NULL;
  wmbt_kv_handle_t* h;
  int i;

  subdir(dir, sizeof dir, "blocks");
  h = open_store(dir);
  REQUIRE(h != NULL);
  for (i = 0; i < 3; i++) {
    make_key(k[i], 10u + (unsigned)i);
    keys[i] = k[i];
  }
  make_key(missing, 99);
  payloads[0] = bytes_of("one");
  payloads[1] = NULL; /* empty payload: NULL allowed with length 0 */
  payloads[2] = bytes_of("three");
  CHECK(wmbt_kv_put_kv_blocks(h, "team-a", keys, payloads, lens, 3) == 8);

  /* A prefix longer than what is stored stops at the first missing key; a miss leaves the
   * outputs untouched. */
  keys[2] = missing;
  CHECK(wmbt_kv_lookup_block_prefix(h, "team-a", keys, 3, &matched, err, sizeof err) == 0);
  CHECK(matched == 2);
  CHECK(err[0] == '\0');
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "team-a", keys, 3, &ptrs, &plens, &borrow) == 0);
  CHECK(ptrs == NULL && plens == NULL && borrow == NULL);
  NO_ERROR(); /* a miss is not an error */
  keys[2] = k[2];
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "team-a", keys, 3, &ptrs, &plens, &borrow) == 1);
  REQUIRE(borrow != NULL);
  CHECK(plens[1] == 0 && plens[2] == 5 && memcmp(ptrs[2], "three", 5) == 0);
  wmbt_kv_release_borrow(borrow);
  {
    /* The same blocks copied into the caller's memory (1.5): nothing to release. */
    uint8_t b0[8], b2[8] = {0};
    uint8_t* dsts[3] = {b0, NULL, b2};
    size_t caps[3] = {sizeof b0, 0, sizeof b2}, got[3] = {9, 9, 9};
    CHECK(wmbt_kv_get_kv_blocks_into(h, "team-a", NULL, keys, 3, dsts, caps, got, err,
                                     sizeof err) == 1);
    CHECK(got[0] == 3 && got[1] == 0 && got[2] == 5 && memcmp(b2, "three", 5) == 0);
    caps[2] = 4;
    CHECK(wmbt_kv_get_kv_blocks_into(h, "team-a", NULL, keys, 3, dsts, caps, got, err,
                                     sizeof err) == -1);
    CHECK(wmbt_kv_last_error_code() == WMBT_KV_ERR_INVALID_ARGUMENT && got[2] == 5);
    CHECK(strstr(err, "dst_caps[2]") != NULL);
  }

  /* Namespace isolation: the same keys elsewhere are absent. */
  CHECK(wmbt_kv_lookup_block_prefix(h, "team-b", keys, 3, &matched, NULL, 0) == 0);
  CHECK(matched == 0);
  borrow = NULL;
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "team-b", keys, 3, &ptrs, &plens, &borrow) == 0);
  CHECK(borrow == NULL);
  /* NULL namespace = the default namespace ("default" when WMBT_KV_NAMESPACE is unset). */
  CHECK(wmbt_kv_lookup_block_prefix(h, NULL, keys, 3, &matched, NULL, 0) == 0);
  CHECK(matched == 0);
  CHECK(wmbt_kv_put_kv_blocks(h, NULL, keys, payloads, lens, 1) == 3);
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, 3, &matched, NULL, 0) == 0);
  CHECK(matched == 1);

  /* Raw tail: keyed by the chain tip; a hit, then misses for another tip and namespace. */
  CHECK(wmbt_kv_put_raw_tail(h, "team-a", k[2], bytes_of("tail!"), 5, err, sizeof err) == 0);
  CHECK(err[0] == '\0');
  CHECK(wmbt_kv_get_raw_tail_borrowed(h, "team-a", k[2], &tail, &tail_len, &borrow, err,
                                      sizeof err) == 1);
  REQUIRE(borrow != NULL);
  CHECK(tail_len == 5 && memcmp(tail, "tail!", 5) == 0);
  wmbt_kv_release_borrow(borrow);
  borrow = NULL;
  tail = NULL;
  tail_len = 77;
  CHECK(wmbt_kv_get_raw_tail_borrowed(h, "team-a", k[1], &tail, &tail_len, &borrow, err,
                                      sizeof err) == 0);
  CHECK(tail == NULL && tail_len == 77 && borrow == NULL);
  CHECK(wmbt_kv_get_raw_tail_borrowed(h, "team-b", k[2], &tail, &tail_len, &borrow, NULL, 0) ==
        0);
  CHECK(borrow == NULL);
  /* An empty raw tail is a hit with a non-NULL pointer, in every mode (shared memory once gave
   * NULL). */
  CHECK(wmbt_kv_put_raw_tail(h, "team-a", k[1], NULL, 0, err, sizeof err) == 0);
  CHECK(wmbt_kv_get_raw_tail_borrowed(h, "team-a", k[1], &tail, &tail_len, &borrow, err,
                                      sizeof err) == 1);
  CHECK(tail != NULL && tail_len == 0 && borrow != NULL);
  wmbt_kv_release_borrow(borrow);
  borrow = NULL;
  wmbt_kv_free(h);
}

static void test_bad_input(void) {
  char dir[512], good[WMBT_KV_KEY_HEX_BUF], short_key[64], err[512], tiny[8];
  const char* keys[2];
  const uint8_t* payloads[1];
  size_t lens[1] = {1};
  size_t matched = 42;
  const uint8_t** ptrs = NULL;
  const size_t* plens = NULL;
  wmbt_kv_borrow_t* borrow = NULL;
  wmbt_kv_handle_t* h;

  subdir(dir, sizeof dir, "bad");
  h = open_store(dir);
  REQUIRE(h != NULL);
  make_key(good, 5);
  memcpy(short_key, good, 63);
  short_key[63] = '\0';
  payloads[0] = bytes_of("x");

  keys[0] = good;
  keys[1] = short_key;
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, 2, &matched, err, sizeof err) == -1);
  CHECK(matched == 42);
  CHECK(strstr(err, "block_hashes_hex[1]") != NULL);
  CHECK(strcmp(err, wmbt_kv_last_error()) == 0);
  /* since 1.3: the kind, and the message's form */
  CHECK(wmbt_kv_last_error_code() == WMBT_KV_ERR_INVALID_ARGUMENT);
  CHECK(strncmp(err, "wombatkv: wmbt_kv_lookup_block_prefix: INVALID_ARGUMENT: ", 56) == 0);
  /* Calls that cannot fail leave the error for the caller to read (a finalizer may run them). */
  wmbt_kv_release_borrow(NULL);
  wmbt_kv_free(NULL);
  CHECK(wmbt_kv_abi_version() == WMBT_KV_ABI_VERSION);
  CHECK(strcmp(err, wmbt_kv_last_error()) == 0);
  CHECK(wmbt_kv_last_error_code() == WMBT_KV_ERR_INVALID_ARGUMENT);
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, 1, &matched, err, sizeof err) == 0);
  CHECK(err[0] == '\0'); /* cleared by the next good call */
  CHECK(wmbt_kv_last_error_code() == WMBT_KV_ERR_NONE);
  NO_ERROR();
  {
    /* since 1.4: settings for one handle; a name that is no setting is refused, naming it */
    const char* names[] = {"WMBT_KV_NO_SUCH_SETTING"};
    const char* values[] = {"1"};
    CHECK(wmbt_kv_open_with_settings(names, values, 1) == NULL);
    CHECK(strstr(wmbt_kv_last_error(), "names[0]") != NULL);
    CHECK(wmbt_kv_last_error_code() == WMBT_KV_ERR_INVALID_ARGUMENT);
  }

  keys[1] = "zz00000000000000000000000000000000000000000000000000000000000000"; /* 64 chars */
  CHECK(wmbt_kv_put_kv_blocks(h, "default", keys + 1, payloads, lens, 1) == -1);
  CHECK(strstr(wmbt_kv_last_error(), "hex") != NULL);
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys, 2, &ptrs, &plens, &borrow) == -1);
  CHECK(borrow == NULL);
  HAS_ERROR();

  /* NULLs. */
  CHECK(wmbt_kv_lookup_block_prefix(NULL, "default", keys, 1, &matched, NULL, 0) == -1);
  CHECK(strstr(wmbt_kv_last_error(), "handle") != NULL);
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", NULL, 1, &matched, NULL, 0) == -1);
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, 1, NULL, NULL, 0) == -1);
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys, 1, NULL, &plens, &borrow) == -1);
  CHECK(wmbt_kv_put_kv_blocks(h, "default", keys, NULL, lens, 1) == -1);
  CHECK(wmbt_kv_put_kv_blocks(NULL, "default", keys, payloads, lens, 1) == -1);
  CHECK(wmbt_kv_put_raw_tail(h, "default", NULL, payloads[0], 1, NULL, 0) == -1);
  CHECK(wmbt_kv_put_raw_tail(h, "default", good, NULL, 1, NULL, 0) == -1);
  CHECK(wmbt_kv_get_raw_tail_borrowed(h, "default", good, NULL, NULL, &borrow, NULL, 0) == -1);
  CHECK(wmbt_kv_lookup_block_prefix(h, "bad namespace", keys, 1, &matched, NULL, 0) == -1);
  CHECK(strstr(wmbt_kv_last_error(), "namespace") != NULL);

  /* Empty batches need no arrays. */
  CHECK(wmbt_kv_put_kv_blocks(h, "default", NULL, NULL, NULL, 0) == 0);
  NO_ERROR();
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", NULL, 0, &matched, NULL, 0) == 0);
  CHECK(matched == 0);

  /* A huge count is refused before any array is read. */
  CHECK(wmbt_kv_put_kv_blocks(h, "default", keys, payloads, lens, SIZE_MAX) == -1);
  CHECK(strstr(wmbt_kv_last_error(), "limit") != NULL);
  CHECK(wmbt_kv_put_kv_blocks(h, "default", keys, payloads, lens, WMBT_KV_BATCH_BLOCKS_MAX + 1) ==
        -1);
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, SIZE_MAX, &matched, NULL, 0) == -1);
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys, SIZE_MAX, &ptrs, &plens, &borrow) ==
        -1);

  /* err_buf is truncated and NUL-terminated. */
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", NULL, 1, &matched, tiny, sizeof tiny) == -1);
  CHECK(strlen(tiny) == sizeof tiny - 1);
  CHECK(strncmp(tiny, wmbt_kv_last_error(), sizeof tiny - 1) == 0);

  CHECK(wmbt_kv_abi_version() == WMBT_KV_ABI_VERSION);
  HAS_ERROR(); /* it cannot fail, so it leaves the last error as it was */
  wmbt_kv_free(h);
}

static void test_native(void) {
  char dir[512], fp[WMBT_KV_FINGERPRINT_HEX_BUF], fp2[WMBT_KV_FINGERPRINT_HEX_BUF];
  char k[3][WMBT_KV_KEY_HEX_BUF], hashes[3 * WMBT_KV_CONTENT_HASH_HEX_BUF];
  char cur_tip[WMBT_KV_KEY_HEX_BUF], err[256], *stats;
  const char* keys[3];
  const char* parents[3];
  const uint8_t* payloads[3];
  size_t lens[3] = {2, 2, 2};
  size_t matched = 0, needed = 0;
  uint64_t version = 0, cur_version = 0;
  const uint8_t** ptrs = NULL;
  const size_t* plens = NULL;
  const uint8_t* bytes = NULL;
  size_t len = 0;
  wmbt_kv_borrow_t* borrow = NULL;
  wmbt_kv_handle_t* h;
  int i;

  CHECK(wmbt_kv_fingerprint_digest("llama-3-8b", "tok-v2", "f16", 1, 1, NULL, fp) == 0);
  CHECK(strlen(fp) == 24);
  CHECK(wmbt_kv_fingerprint_digest("llama-3-8b", "tok-v2", "f16", 1, 1, "", fp2) == 0);
  CHECK(strcmp(fp, fp2) == 0); /* NULL LoRA = "" */
  CHECK(wmbt_kv_fingerprint_digest("llama-3-8b", "tok-v2", "f16", 2, 1, NULL, fp2) == 0);
  CHECK(strcmp(fp, fp2) != 0); /* TP is part of the identity */
  CHECK(wmbt_kv_fingerprint_digest(NULL, "tok-v2", "f16", 1, 1, NULL, fp2) == -1);
  CHECK(wmbt_kv_fingerprint_digest("m", "t", "f16", 0, 1, NULL, fp2) == -1);
  { /* since 1.2: free-form extras are part of the identity; none = the plain digest */
    const char* names[] = {"block_size"};
    const char* values[] = {"16"};
    CHECK(wmbt_kv_fingerprint_digest_extras("llama-3-8b", "tok-v2", "f16", 1, 1, NULL, NULL, NULL,
                                            0, fp2) == 0);
    CHECK(strcmp(fp, fp2) == 0);
    CHECK(wmbt_kv_fingerprint_digest_extras("llama-3-8b", "tok-v2", "f16", 1, 1, NULL, names,
                                            values, 1, fp2) == 0);
    CHECK(strcmp(fp, fp2) != 0);
  }

  subdir(dir, sizeof dir, "native");
  h = open_store(dir);
  REQUIRE(h != NULL);
  for (i = 0; i < 3; i++) {
    make_key(k[i], 40u + (unsigned)i);
    keys[i] = k[i];
  }
  payloads[0] = bytes_of("p0");
  payloads[1] = bytes_of("p1");
  payloads[2] = bytes_of("p2");
  /* Explicit parents: a fork, 0 ← 1 and 0 ← 2. */
  parents[0] = NULL;
  parents[1] = k[0];
  parents[2] = k[0];
  CHECK(wmbt_kv_put_blocks_ex(h, "default", fp, keys, parents, payloads, lens, 3, hashes, err,
                              sizeof err) == 0);
  CHECK(strlen(hashes) == 40 && strlen(hashes + 82) == 40);

  /* Not published: invisible to lookups, readable by content hash. */
  CHECK(wmbt_kv_lookup_block_prefix_ex(h, "default", fp, keys, 2, &matched, NULL, 0) == 0);
  CHECK(matched == 0);
  CHECK(wmbt_kv_get_by_content_hash_borrowed(h, "default", hashes + 41, &bytes, &len, &borrow,
                                             NULL, 0) == 1);
  REQUIRE(borrow != NULL);
  CHECK(len == 2 && memcmp(bytes, "p1", 2) == 0);
  wmbt_kv_release_borrow(borrow);
  borrow = NULL;
  CHECK(wmbt_kv_get_by_content_hash_borrowed(
            h, "default", "0000000000000000000000000000000000000000", &bytes, &len, &borrow,
            NULL, 0) == 0);
  CHECK(borrow == NULL);
  CHECK(wmbt_kv_get_by_content_hash_borrowed(h, "default", k[0], &bytes, &len, &borrow, NULL,
                                             0) == -1); /* 64 hex is not a content hash */

  /* CAS: create (expected 0), then a stale create conflicts and learns the current tip. */
  CHECK(wmbt_kv_publish_chain(h, "default", fp, k[0], k[1], 0, &version, NULL, NULL, err,
                              sizeof err) == 0);
  CHECK(version >= 1);
  CHECK(wmbt_kv_publish_chain(h, "default", fp, k[0], k[2], 0, NULL, cur_tip, &cur_version, err,
                              sizeof err) == 1);
  CHECK(strcmp(cur_tip, k[1]) == 0 && cur_version == version);
  CHECK(err[0] == '\0'); /* a conflict is an answer, not an error */
  CHECK(wmbt_kv_publish_chain(h, "default", fp, k[0], k[2], (int64_t)version, &cur_version, NULL,
                              NULL, NULL, 0) == 0);
  CHECK(cur_version > version);
  /* Last writer wins, chain id NULL = the tip: a second chain 0 <- 2 with id k[2]. */
  CHECK(wmbt_kv_publish_chain(h, "default", fp, NULL, k[2], -1, NULL, NULL, NULL, NULL, 0) == 0);

  /* Visible under fp, not under the handle's default fingerprint. */
  keys[1] = k[2];
  CHECK(wmbt_kv_lookup_block_prefix_ex(h, "default", fp, keys, 2, &matched, NULL, 0) == 0);
  CHECK(matched == 2);
  CHECK(wmbt_kv_lookup_block_prefix(h, "default", keys, 2, &matched, NULL, 0) == 0);
  CHECK(matched == 0);
  CHECK(wmbt_kv_get_kv_blocks_borrowed_ex(h, "default", fp, keys, 2, &ptrs, &plens, &borrow, err,
                                          sizeof err) == 1);
  REQUIRE(borrow != NULL);
  CHECK(plens[1] == 2 && memcmp(ptrs[1], "p2", 2) == 0);
  wmbt_kv_release_borrow(borrow);
  borrow = NULL;
  CHECK(wmbt_kv_get_kv_blocks_borrowed(h, "default", keys, 2, &ptrs, &plens, &borrow) == 0);
  CHECK(wmbt_kv_lookup_block_prefix_ex(h, "default", "123", keys, 2, &matched, err, sizeof err) ==
        -1);
  CHECK(strstr(err, "fingerprint") != NULL);

  /* Raw tail under an explicit fingerprint. */
  CHECK(wmbt_kv_put_raw_tail_ex(h, "default", fp, k[2], bytes_of("tt"), 2, NULL, 0) == 0);
  CHECK(wmbt_kv_get_raw_tail_borrowed_ex(h, "default", fp, k[2], &bytes, &len, &borrow, NULL, 0) ==
        1);
  REQUIRE(borrow != NULL);
  CHECK(len == 2 && memcmp(bytes, "tt", 2) == 0);
  wmbt_kv_release_borrow(borrow);
  borrow = NULL;
  CHECK(wmbt_kv_get_raw_tail_borrowed(h, "default", k[2], &bytes, &len, &borrow, NULL, 0) == 0);

  CHECK(wmbt_kv_refresh(h, err, sizeof err) == 0);
  CHECK(wmbt_kv_refresh(NULL, err, sizeof err) == -1);

  /* Stats: ask for the size, then fetch. */
  CHECK(wmbt_kv_stats_json(h, NULL, 0, &needed) == -1);
  CHECK(needed > 2);
  stats = (char*)malloc(needed);
  REQUIRE(stats != NULL);
  CHECK(wmbt_kv_stats_json(h, stats, needed, NULL) == 0);
  CHECK(stats[0] == '{' && stats[strlen(stats) - 1] == '}' && strlen(stats) + 1 <= needed);
  CHECK(strstr(stats, "\"publishes\":") != NULL);
  free(stats);
  wmbt_kv_free(h);
}

/* Zero-copy put: the engine fills store-allocated buffers, the get lends those very bytes. */
static void test_zero_copy_put(void) {
  char dir[512], k[2][WMBT_KV_KEY_HEX_BUF];
  const char* keys[2];
  wmbt_kv_payload_t* payloads[2];
  uint8_t* data[2];
  const uint8_t** ptrs = NULL;
  const size_t* plens = NULL;
  wmbt_kv_borrow_t* borrow = NULL;
  uint8_t* unused = NULL;
  size_t matched = 0;
  wmbt_kv_handle_t* h;
  int i;

  subdir(dir, sizeof dir, "zero-copy");
  h = open_store(dir);
  REQUIRE(h != NULL);
  for (i = 0; i < 2; i++) {
    make_key(k[i], 70u + (unsigned)i);
    keys[i] = k[i];
    payloads[i] = wmbt_kv_payload_alloc(4096, &data[i]);
    REQUIRE(payloads[i] != NULL);
    memset(data[i], 'a' + i, 4096);
  }
  CHECK(wmbt_kv_put_blocks_owned(h, "zc", NULL, keys, NULL, payloads, 2, NULL, NULL, 0) == 0);
  NO_ERROR();
  CHECK(wmbt_kv_publish_chain(h, "zc", NULL, NULL, k[1], -1, NULL, NULL, NULL, NULL, 0) == 0);
  CHECK(wmbt_kv_lookup_block_prefix(h, "zc", keys, 2, &matched, NULL, 0) == 0);
  CHECK(matched == 2);
  CHECK(wmbt_kv_get_kv_blocks_borrowed_ex(h, "zc", NULL, keys, 2, &ptrs, &plens, &borrow, NULL,
                                         0) == 1);
  if (borrow != NULL) {
    /* The same bytes, not a copy (in this process; a daemon holds its own copy). */
    if (!daemon_mode()) CHECK(ptrs[0] == data[0] && ptrs[1] == data[1]);
    CHECK(plens[0] == 4096 && ptrs[0][0] == 'a' && ptrs[0][4095] == 'a');
    CHECK(plens[1] == 4096 && ptrs[1][0] == 'b' && ptrs[1][4095] == 'b');
    CHECK(plens[1] == 4096 && ptrs[1][4095] == 'b');
    wmbt_kv_release_borrow(borrow);
  }
  /* Bad input is refused without leaking: an oversized buffer, a NULL payload in a batch. */
  CHECK(wmbt_kv_payload_alloc((size_t)1 << 40, &unused) == NULL);
  CHECK(strstr(wmbt_kv_last_error(), "len") != NULL);
  CHECK(wmbt_kv_payload_alloc(16, NULL) == NULL);
  payloads[0] = wmbt_kv_payload_alloc(16, &data[0]);
  payloads[1] = NULL;
  CHECK(wmbt_kv_put_blocks_owned(h, "zc", NULL, keys, NULL, payloads, 2, NULL, NULL, 0) == -1);
  CHECK(strstr(wmbt_kv_last_error(), "payloads[1]") != NULL);
  wmbt_kv_payload_free(NULL);
  /* One payload named by two blocks (the same bytes) is stored and released once. */
  payloads[0] = wmbt_kv_payload_alloc(64, &data[0]);
  REQUIRE(payloads[0] != NULL);
  memset(data[0], 'z', 64);
  payloads[1] = payloads[0];
  CHECK(wmbt_kv_put_blocks_owned(h, "zc-dup", NULL, keys, NULL, payloads, 2, NULL, NULL, 0) == 0);
  NO_ERROR();
  /* A count over the limit reads no array (here one element long) and leaves the payload with
   * the caller, who still owns and frees it. */
  payloads[0] = wmbt_kv_payload_alloc(64, &data[0]);
  REQUIRE(payloads[0] != NULL);
  CHECK(wmbt_kv_put_blocks_owned(h, "zc", NULL, keys, NULL, payloads, (size_t)-1, NULL, NULL,
                                 0) == -1);
  CHECK(strstr(wmbt_kv_last_error(), "exceeds the limit") != NULL);
  data[0][63] = 'y';
  wmbt_kv_payload_free(payloads[0]);
  wmbt_kv_free(h);
}

int main(void) {
  const char* tmp = getenv("TMPDIR");
  snprintf(g_root, sizeof g_root, "%s/wombatkv-capi-c-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(g_root) == NULL) {
    perror("mkdtemp");
    return 2;
  }
  /* Settings that would change what this test sees. */
  unsetenv("WMBT_KV_REMOTE_PREFIX");
  unsetenv("WMBT_KV_TCP_ADDR");
  unsetenv("WMBT_KV_HTTP_ADDR");
  unsetenv("WMBT_KV_BUCKET");
  unsetenv("WMBT_KV_NAMESPACE");
  unsetenv("WMBT_KV_FINGERPRINT");
  unsetenv("WMBT_KV_CACHE_BYTES");

  test_abi_version();
  test_blake3();
  test_crc32c();
  test_backend_selection();
  test_seed_example();
  test_blocks_raw_tail_and_namespaces();
  test_bad_input();
  test_native();
  test_zero_copy_put();

  stop_daemon();
  nftw(g_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
