/* wombatkv.h — the WombatKV C ABI, version 1.5.
 *
 * WombatKV stores the KV-cache blocks an LLM inference engine computes during prefill, so that a
 * later request (after a restart, in another process, on another host) restores them instead of
 * prefilling again. This header is plain C (C11, and C++ through extern "C"); link with
 * -lwombatkv (pkg-config: wombatkv).
 *
 * Compatibility: the 15 entry points of ABI 1.0 keep their exact signatures and behaviour, so
 * engines written against 1.0 relink without source changes. 1.1 adds the functions marked
 * "since 1.1" (explicit fingerprints and chains, CAS publish, content-hash get, refresh, stats),
 * 1.2 fingerprint extras, 1.3 wmbt_kv_last_error_code, 1.4 wmbt_kv_open_with_settings, 1.5
 * wmbt_kv_get_kv_blocks_into.
 *
 * Documents named docs/X.md are installed under share/doc/wombatkv/ (and are in the source tree);
 * docs/engine.md walks an engine through these calls, with a Python example under examples/.
 *
 * Words (docs/glossary.md): a *block key* is a 32-byte id chosen by the engine, passed as exactly
 * 64 hex digits (either case); a *chain* is a sequence of blocks root→tip, made visible to
 * lookups by *publishing* its head; a *fingerprint* names the model identity (24 hex; the 1.0
 * calls use WMBT_KV_FINGERPRINT, whose default is 24 zeros: give each model its own, or two
 * models' blocks with equal keys are served to each other; a lookup under another fingerprint
 * simply misses); a
 * *content hash* is BLAKE3-20 of a payload (40 hex); a *sidecar* ("raw tail") is extra bytes
 * keyed by a chain tip; a *borrow* lends bytes that live in the store's memory.
 *
 * Conventions shared by every function:
 *   - Errors: functions return int32_t/int64_t (-1 = error) or a pointer (NULL = error). Every
 *     call first clears this thread's last error; a call that fails sets it (wmbt_kv_last_error,
 *     and its kind: wmbt_kv_last_error_code). Six functions that cannot fail leave it as it is:
 *     wmbt_kv_free, wmbt_kv_release_borrow and wmbt_kv_payload_free (so a finalizer that releases
 *     a borrow or a payload between a failed call and the read of its error does not erase it),
 *     wmbt_kv_abi_version, wmbt_kv_last_error and wmbt_kv_last_error_code.
 *     Functions with err_buf/err_len also copy the message there, truncated and NUL-terminated
 *     (an empty string on success); err_buf may be NULL or err_len 0. A miss (return 0 from a
 *     get) or a CAS conflict (return 1 from publish) is not an error and leaves no message.
 *   - Hex arguments have exactly the stated number of hex digits, either case; anything else
 *     (wrong length, non-hex, or NULL where the function gives NULL no meaning) is an error (-1).
 *     Hex output is lowercase and NUL-terminated.
 *   - namespace_: [A-Za-z0-9._-]{1,64}; NULL or "" means the handle's default namespace
 *     (WMBT_KV_NAMESPACE, "default"). Nothing crosses namespaces.
 *   - Counts are bounded: at most WMBT_KV_BATCH_BLOCKS_MAX blocks per put and
 *     WMBT_KV_LOOKUP_KEYS_MAX keys per lookup/get; larger counts are an error before any array
 *     is read. A count of 0 needs no arrays (they may be NULL).
 *   - No C++ exception ever crosses this ABI; an unexpected failure is -1 with "internal error".
 *
 * Ownership: a handle is created by wmbt_kv_init_from_env / wmbt_kv_open_* and destroyed by
 * wmbt_kv_free. A borrow (wmbt_kv_borrow_t) owns the bytes and the pointer/length arrays it lent
 * and is destroyed by wmbt_kv_release_borrow; until then those bytes stay valid and are never
 * evicted. A borrow stays valid even after wmbt_kv_free of its handle (it keeps the store alive
 * until released), but release every borrow before reopening the same data directory, which only
 * one store may hold at a time. Input arrays and strings are only read during the call.
 * Through wombatkvd over shared memory, the bytes of a borrowed payload under 64 KiB stay in this
 * client's response area (WMBT_KV_SHM_DATA_BYTES on the daemon, 1 GiB by default) until the
 * borrow is released, so borrows held without bound eventually make gets fail with
 * RESOURCE_EXHAUSTED ("... responses still borrowed: release borrows sooner"), and one client
 * may hold at most 16,384 borrows at once over shared memory, whatever their size (then
 * RESOURCE_EXHAUSTED "... the most one client may"); embedded and TCP borrows hold only memory.
 * Release each borrow once its bytes are copied into the engine, or have the copy made for you
 * into memory of your own, with nothing left to release: wmbt_kv_get_kv_blocks_into. Borrowed
 * bytes have no promised alignment (over TCP they may start at any address): copy them before
 * viewing them as wider types.
 * A pointer to borrowed bytes is never NULL, also for an empty payload.
 *
 * Daemon modes: a call through wombatkvd that cannot reach it (daemon restarting, stopped or
 * gone) returns -1 with UNAVAILABLE in last_error; the handle reconnects by itself on a later
 * call, so treat it as a miss (prefill) and go on. A call that got no answer within
 * WMBT_KV_REQUEST_TIMEOUT_MS (default 300 s) is UNAVAILABLE too, and may or may not have taken
 * effect. Every call otherwise behaves as in the embedded mode.
 *
 * Logging: the library writes its own diagnostics to stderr, one line each, prefixed
 * "libwombatkv [LEVEL]" (e.g. a WMBT_KV_* variable that is no setting, a store rebuilt at open);
 * WMBT_KV_LOG_LEVEL chooses the least severe level written (debug, info, warn: the default,
 * error). At info, each handle opened names its backend ("opened: shared memory to wombatkvd
 * (WMBT_KV_REMOTE_PREFIX=...)"), to check which mode the environment chose.
 *
 * Thread-safety: every function may be called from any number of threads at once, also on one
 * shared handle, except that wmbt_kv_free must not race other calls on the same handle. A borrow
 * may be released on any thread. wmbt_kv_last_error is per thread.
 *
 * Processes: a handle and its borrows belong to the process that opened the handle. A child made
 * by fork() (Python's multiprocessing does so by default) must open its own: calls on a handle
 * it inherited fail with FAILED_PRECONDITION, and wmbt_kv_free and wmbt_kv_release_borrow of an
 * inherited handle or borrow do nothing in the child (the parent's store, socket and shared
 * memory are left untouched). Bytes an inherited borrow points to may still be read there.
 */
#ifndef WOMBATKV_H_
#define WOMBATKV_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define WMBT_KV_API __attribute__((visibility("default")))
#else
#define WMBT_KV_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define WMBT_KV_ABI_VERSION_MAJOR 1
#define WMBT_KV_ABI_VERSION_MINOR 5
/* (major << 16) | minor: what wmbt_kv_abi_version() returns for this header. */
#define WMBT_KV_ABI_VERSION \
  ((uint32_t)(((uint32_t)WMBT_KV_ABI_VERSION_MAJOR << 16) | (uint32_t)WMBT_KV_ABI_VERSION_MINOR))

/* Limits (the store's own: a larger count or size is an error before anything is read). */
#define WMBT_KV_BATCH_BLOCKS_MAX ((size_t)1 << 16)     /* blocks in one put */
#define WMBT_KV_LOOKUP_KEYS_MAX ((size_t)1 << 20)      /* keys in one lookup or get */
#define WMBT_KV_BLOCK_BYTES_MAX ((uint64_t)256 << 20)  /* one payload */
#define WMBT_KV_SIDECAR_BYTES_MAX ((uint64_t)1 << 30)  /* one raw tail */
/* Through wombatkvd (shared memory or TCP) one get returns at most 1 GiB - 16 MiB of payload (one
 * response frame) and at most 65,536 blocks: a larger one fails (-1, RESOURCE_EXHAUSTED); ask for
 * fewer blocks per call (a get may start anywhere in a chain). One put sends at most one frame
 * (1 GiB + 1 MiB by default, wombatkvd --max-frame-bytes; over shared memory the client's request
 * area, WMBT_KV_SHM_DATA_BYTES): a larger batch fails (-1, RESOURCE_EXHAUSTED) before anything is
 * stored. Embedded calls have no such bounds. */

/* Sizes of hex output buffers, including the terminating NUL. */
#define WMBT_KV_KEY_HEX_BUF 65          /* block key, chain id, BLAKE3-256 */
#define WMBT_KV_CONTENT_HASH_HEX_BUF 41 /* content hash (BLAKE3-20) */
#define WMBT_KV_FINGERPRINT_HEX_BUF 25  /* fingerprint digest */

typedef struct wmbt_kv_handle wmbt_kv_handle_t; /* opaque: one open store */
typedef struct wmbt_kv_borrow wmbt_kv_borrow_t; /* opaque: lent bytes, see Ownership */
typedef struct wmbt_kv_payload wmbt_kv_payload_t; /* opaque: a buffer handed to the store */

/* ---- Version, hashing, errors (1.0) ---------------------------------------------------------- */

/* (major << 16) | minor of the linked library: 0x00010005 for 1.5. Compare the major with
 * WMBT_KV_ABI_VERSION_MAJOR; a larger minor only adds functions. */
WMBT_KV_API uint32_t wmbt_kv_abi_version(void);

/* Unkeyed 32-byte BLAKE3 of in[0..in_len) as 64 lowercase hex digits + NUL into out (at least
 * WMBT_KV_KEY_HEX_BUF bytes). Returns 0, or -1 if out is NULL or in is NULL with in_len > 0
 * (in may be NULL when in_len is 0). */
WMBT_KV_API int32_t wmbt_kv_blake3_64hex(const uint8_t* in, size_t in_len, char* out);

/* CRC32C (Castagnoli), standard finalised value: 0 for empty input, 0xE3069283 for
 * "123456789". If in is NULL with in_len > 0 it returns 0 and sets last_error. */
WMBT_KV_API uint32_t wmbt_kv_crc32c(const uint8_t* in, size_t in_len);

/* Continues a finalised CRC32C: wmbt_kv_crc32c_append(0, D) == wmbt_kv_crc32c(D), and appending
 * the pieces of D one after another equals one call over D. If in is NULL with in_len > 0 it
 * returns crc unchanged and sets last_error. */
WMBT_KV_API uint32_t wmbt_kv_crc32c_append(uint32_t crc, const uint8_t* in, size_t in_len);

/* The message of this thread's last failed call, or "" if the last call succeeded. Never NULL.
 * The string stays valid until the next wmbt_kv_* call on this thread. Does not clear it. Its
 * form is "wombatkv: <function>: <CODE>: <what went wrong>", CODE as in the names below
 * (UNAVAILABLE, INVALID_ARGUMENT, ...), for logs; branch on wmbt_kv_last_error_code. */
WMBT_KV_API const char* wmbt_kv_last_error(void);

/* The kind of this thread's last error (since 1.3): one of these values, which never change.
 * What to do about each, for an engine:
 *   NOT_FOUND            a chain, tip or sidecar named by the call does not exist.
 *   UNAVAILABLE          wombatkvd unreachable or silent for WMBT_KV_REQUEST_TIMEOUT_MS, or an
 *                        object store down: treat a read as a miss and go on; the handle
 *                        reconnects by itself. A write may or may not have taken effect.
 *   CONFLICT             a write lost a race to another writer (not a CAS conflict, which is
 *                        publish's return 1): read the chain again and retry if still wanted.
 *   INVALID_ARGUMENT     the call is malformed (bad hex, NULL, counts, namespace): a caller bug.
 *   CORRUPTION           stored or transmitted bytes failed their check and were not served.
 *   RESOURCE_EXHAUSTED   a limit was hit (memory, disk, a namespace budget, borrows held).
 *   FAILED_PRECONDITION  the store is not in a state to do it (data directory held elsewhere,
 *                        blocks not put before their publish).
 *   INTERNAL             a bug; the message says where.
 *   PERMISSION_DENIED    wombatkvd refused the auth token, or its namespace grant.
 * WMBT_KV_ERR_NONE when the last call succeeded (or answered a miss or a CAS conflict). */
#define WMBT_KV_ERR_NONE 0
#define WMBT_KV_ERR_NOT_FOUND 1
#define WMBT_KV_ERR_UNAVAILABLE 2
#define WMBT_KV_ERR_CONFLICT 3
#define WMBT_KV_ERR_INVALID_ARGUMENT 4
#define WMBT_KV_ERR_CORRUPTION 5
#define WMBT_KV_ERR_RESOURCE_EXHAUSTED 6
#define WMBT_KV_ERR_FAILED_PRECONDITION 7
#define WMBT_KV_ERR_INTERNAL 8
#define WMBT_KV_ERR_PERMISSION_DENIED 9
WMBT_KV_API int32_t wmbt_kv_last_error_code(void);

/* ---- Handles (1.0) --------------------------------------------------------------------------- */

/* Opens the backend the environment selects, in this order: WMBT_KV_REMOTE_PREFIX (daemon over
 * shared memory) > WMBT_KV_TCP_ADDR > WMBT_KV_HTTP_ADDR > embedded (a store in this process,
 * under WMBT_KV_DATA_DIR, default ~/.wombatkv). Returns NULL with last_error on failure: a bad
 * setting (naming the variable), the data directory held by another process (naming the owner),
 * a daemon that cannot be reached or refuses the token (naming the prefix or address), or
 * WMBT_KV_HTTP_ADDR (this build has no HTTP transport). Embedded handles of one process on one
 * data directory share one store (as handles on one daemon do), each with its own namespace and
 * fingerprint; a handle asking for other store settings there (cache sizes, bucket, ...) is
 * refused with FAILED_PRECONDITION naming the setting. */
WMBT_KV_API wmbt_kv_handle_t* wmbt_kv_init_from_env(void);

/* Connects to a wombatkvd daemon over TCP at "HOST:PORT"; the other settings (fingerprint,
 * namespace, WMBT_KV_AUTH_TOKEN) come from the environment, as for wmbt_kv_init_from_env. It
 * connects and is greeted before it returns, so NULL with last_error names a bad address, a
 * daemon that cannot be reached ("is wombatkvd running?") or a token it refused. Connecting and
 * the greeting each give up after 5 s (a host that drops packets, a service that does not answer
 * as wombatkvd). A handle reconnects by itself after the daemon restarts. */
WMBT_KV_API wmbt_kv_handle_t* wmbt_kv_open_tcp(const char* addr);

/* Connects to a daemon over HTTP. Not supported in this build: returns NULL with last_error. */
WMBT_KV_API wmbt_kv_handle_t* wmbt_kv_open_http(const char* addr);

/* Closes the handle: waits for background uploads, then releases the data directory, or, if
 * borrows of it are outstanding, does so when the last one is released (see Ownership): that
 * wmbt_kv_release_borrow call then does the waiting, so release borrows before wmbt_kv_free
 * where a stall matters (e.g. a Python finalizer). NULL is a no-op; freeing a handle twice is
 * undefined, as for free(3). */
WMBT_KV_API void wmbt_kv_free(wmbt_kv_handle_t* handle);

/* Releases a borrow and the bytes and arrays it lent. NULL is a no-op; releasing one twice is
 * undefined, as for free(3). */
WMBT_KV_API void wmbt_kv_release_borrow(wmbt_kv_borrow_t* borrow);

/* ---- Blocks (1.0; the fingerprint is the handle's WMBT_KV_FINGERPRINT) ----------------------- */

/* Counts how many leading keys of block_hashes_hex[0..block_count) are present, as a path from a
 * root, in chains published in (namespace_, handle fingerprint). Touches only RAM.
 * Returns 0 with *out_matched_count set (0 when block_count is 0), or -1 on error (which leaves
 * *out_matched_count untouched). */
WMBT_KV_API int32_t wmbt_kv_lookup_block_prefix(wmbt_kv_handle_t* handle, const char* namespace_,
                                                const char* const* block_hashes_hex,
                                                size_t block_count, size_t* out_matched_count,
                                                char* err_buf, size_t err_len);

/* Borrows the payloads of all block_count keys, all or nothing. The keys are consecutive blocks
 * of a chain published in (namespace_, handle fingerprint), in root-to-tip order, starting at any
 * block of it (one key alone gets that block wherever it sits in its chain); a key that does not
 * follow the key before it is a miss, and so is a repeated key (a chain holds each block once:
 * wmbt_kv_put_kv_blocks refuses one).
 * Returns 1 when every key is present: (*out_payload_ptrs)[i] / (*out_payload_lens)[i] are block
 * i's bytes, and both arrays and the bytes are owned by *out_borrow (release it). With
 * block_count 0 it returns 1 with a borrow (release it too) and the two array pointers may be
 * NULL: there is nothing to read.
 * Returns 0 on a miss (any key absent): the outputs are left untouched. Returns -1 on error
 * (outputs untouched; bytes that fail their content hash are an error, never served). */
WMBT_KV_API int32_t wmbt_kv_get_kv_blocks_borrowed(wmbt_kv_handle_t* handle,
                                                   const char* namespace_,
                                                   const char* const* block_hashes_hex,
                                                   size_t block_count,
                                                   const uint8_t*** out_payload_ptrs,
                                                   const size_t** out_payload_lens,
                                                   wmbt_kv_borrow_t** out_borrow);

/* Stores block_count blocks as one chain in key order (block 0 is a root, block i's parent is
 * block i-1), then publishes it with the tip key (the last one) as chain id, last writer wins.
 * When it returns, the chain is durable and visible to lookups and gets.
 * Pass the whole prefix, not only the blocks a lookup missed: blocks already stored cost no
 * second upload (a put of stored content is idempotent), but a call with only the new blocks
 * makes the first of them a root, so lookups from the real root stop where it begins. To append
 * to a stored chain without resending it, use wmbt_kv_put_blocks_ex with parent_keys_hex and
 * wmbt_kv_publish_chain. A key is one block: storing other bytes under a key that is already
 * stored replaces what every chain through it returns, so derive keys from the tokens (and
 * their prefix) as engines do.
 * Returns the sum of lens (0 when block_count is 0), or -1 on error. payloads[i] may be NULL only
 * when lens[i] is 0. Each payload is at most WMBT_KV_BLOCK_BYTES_MAX bytes. The keys must be
 * distinct (a chain holds a block once) and not all zeros (reserved: a root's parent); either
 * mistake is an error before anything is stored. */
WMBT_KV_API int64_t wmbt_kv_put_kv_blocks(wmbt_kv_handle_t* handle, const char* namespace_,
                                          const char* const* block_hashes_hex,
                                          const uint8_t* const* payloads, const size_t* lens,
                                          size_t block_count);

/* Stores sidecar bytes ("raw tail") keyed by the chain tip key, durably. They are independent of
 * the chain head: a chain may be visible without its raw tail (then the get is a miss).
 * Returns 0, or -1 on error. bytes may be NULL when len is 0. */
WMBT_KV_API int32_t wmbt_kv_put_raw_tail(wmbt_kv_handle_t* handle, const char* namespace_,
                                         const char* chain_tip_hash_hex, const uint8_t* bytes,
                                         size_t len, char* err_buf, size_t err_len);

/* Borrows the raw tail of a chain tip. Returns 1 on a hit (*out_bytes and *out_len owned by
 * *out_borrow), 0 on a miss (outputs untouched), -1 on error. */
WMBT_KV_API int32_t wmbt_kv_get_raw_tail_borrowed(wmbt_kv_handle_t* handle, const char* namespace_,
                                                  const char* chain_tip_hash_hex,
                                                  const uint8_t** out_bytes, size_t* out_len,
                                                  wmbt_kv_borrow_t** out_borrow, char* err_buf,
                                                  size_t err_len);

/* ---- Native entry points (since 1.1) --------------------------------------------------------- */
/* fingerprint_hex: 24 hex digits, or NULL for the handle's default (WMBT_KV_FINGERPRINT). */

/* Opens an embedded store under data_dir (created if missing; NULL or "" = WMBT_KV_DATA_DIR or
 * its default), whatever the transport variables say; every other setting comes from the
 * environment. Returns NULL with last_error on failure. */
WMBT_KV_API wmbt_kv_handle_t* wmbt_kv_open_embedded(const char* data_dir);

/* wmbt_kv_init_from_env with settings given here instead of by the environment (since 1.4): two
 * handles of one process may then differ (another fingerprint, data directory, daemon), and a
 * binding need not write its process's environment. names[i] is a setting's variable name
 * (docs/configuration.md, e.g. "WMBT_KV_FINGERPRINT", "WMBT_KV_TCP_ADDR"), values[i] its value,
 * parsed as the variable would be (an empty value clears an optional setting); each name at most
 * once, at most 256 pairs. A name given here is not read from the environment at all (nor the
 * AWS_* variable standing in for it); every other setting is, as for wmbt_kv_init_from_env, which
 * also picks the backend. count 0 (the arrays may then be NULL) is wmbt_kv_init_from_env.
 * Returns NULL with last_error on failure, naming names[i] for an unknown name, a repeated one or
 * a value that does not parse. */
WMBT_KV_API wmbt_kv_handle_t* wmbt_kv_open_with_settings(const char* const* names,
                                                         const char* const* values, size_t count);

/* Digest of a model-identity envelope (model, tokenizer, KV dtype, tensor and pipeline parallel
 * degrees, LoRA: whatever makes two models' KV blocks incompatible) as 24 lowercase hex
 * + NUL into out_hex (at least WMBT_KV_FINGERPRINT_HEX_BUF bytes). model_id, tokenizer_id and
 * kv_dtype must be non-NULL; lora may be NULL (no LoRA, same as ""); tp and pp are at least 1.
 * Returns 0, or -1 on error. The same inputs give the same digest on every host and build. */
WMBT_KV_API int32_t wmbt_kv_fingerprint_digest(const char* model_id, const char* tokenizer_id,
                                               const char* kv_dtype, uint32_t tp, uint32_t pp,
                                               const char* lora, char* out_hex);

/* wmbt_kv_fingerprint_digest with the envelope's free-form extras: extra_count
 * name/value pairs (extra_names[i], extra_values[i]) for whatever else makes two models' KV
 * blocks incompatible, e.g. "block_size" = "16" or "rope_scaling" = "yarn:4". Names are non-empty
 * and distinct; values may be empty; at most 256 pairs. Their order does not matter, and no
 * extras (extra_count 0; the arrays may then be NULL) gives wmbt_kv_fingerprint_digest's digest.
 * Returns 0, or -1 on error (since 1.2). */
WMBT_KV_API int32_t wmbt_kv_fingerprint_digest_extras(
    const char* model_id, const char* tokenizer_id, const char* kv_dtype, uint32_t tp, uint32_t pp,
    const char* lora, const char* const* extra_names, const char* const* extra_values,
    size_t extra_count, char* out_hex);

/* wmbt_kv_lookup_block_prefix with an explicit fingerprint. Returns 0 or -1. */
WMBT_KV_API int32_t wmbt_kv_lookup_block_prefix_ex(wmbt_kv_handle_t* handle,
                                                   const char* namespace_,
                                                   const char* fingerprint_hex,
                                                   const char* const* block_hashes_hex,
                                                   size_t block_count, size_t* out_matched_count,
                                                   char* err_buf, size_t err_len);

/* wmbt_kv_get_kv_blocks_borrowed with an explicit fingerprint and an error buffer.
 * Returns 1 all present, 0 miss (outputs untouched), -1 error. */
WMBT_KV_API int32_t wmbt_kv_get_kv_blocks_borrowed_ex(
    wmbt_kv_handle_t* handle, const char* namespace_, const char* fingerprint_hex,
    const char* const* block_hashes_hex, size_t block_count, const uint8_t*** out_payload_ptrs,
    const size_t** out_payload_lens, wmbt_kv_borrow_t** out_borrow, char* err_buf,
    size_t err_len);

/* Copies block_count blocks into the caller's memory instead of lending them (since 1.5): the
 * keys follow wmbt_kv_get_kv_blocks_borrowed's rules (all or nothing; consecutive blocks of one
 * published chain, from any block of it; a repeated key is a miss), fingerprint_hex NULL is the
 * handle's. Block i's bytes go to dsts[i], which has room for dst_caps[i] bytes, and its length
 * to out_lens[i]. Nothing stays held when it returns (no borrow to release), so it suits memory
 * the engine owns: a pinned staging buffer, a NumPy array. The buffers must not overlap each
 * other (given their dst_caps: INVALID_ARGUMENT before anything is read, in every mode); dsts[i]
 * may be NULL only when dst_caps[i] is 0.
 * Returns 1 when every key is present and every block was copied (out_lens set); 0 on a miss
 * (nothing written); -1 on error (out_lens not written), except that when a block is larger than
 * its buffer the error (INVALID_ARGUMENT, naming dst_caps[i]) comes with out_lens[i] set for every
 * block and the buffers untouched, so the caller can grow its buffers and ask again. Over TCP the
 * blocks are received straight into dsts, so after another error (the connection lost or
 * corrupted midway) the buffers may hold part of the answer: use them only when it returns 1. With
 * block_count 0 it returns 1 and the arrays may be NULL. */
WMBT_KV_API int32_t wmbt_kv_get_kv_blocks_into(wmbt_kv_handle_t* handle, const char* namespace_,
                                               const char* fingerprint_hex,
                                               const char* const* block_hashes_hex,
                                               size_t block_count, uint8_t* const* dsts,
                                               const size_t* dst_caps, size_t* out_lens,
                                               char* err_buf, size_t err_len);

/* Stores blocks with explicit parents and does NOT publish them: they are readable by content
 * hash at once, invisible to lookups until wmbt_kv_publish_chain names a tip that reaches them.
 * parent_keys_hex NULL = chain order (block 0 a root, block i's parent block i-1); otherwise
 * parent_keys_hex[i] is block i's parent, NULL or 64 zeros for a root. A block's key must differ
 * from its parent. Identical payloads are stored once.
 * out_hashes (NULL or count * WMBT_KV_CONTENT_HASH_HEX_BUF bytes) receives block i's content hash
 * as 40 hex + NUL at offset i * 41. Returns 0 (also for count 0), or -1 on error. */
WMBT_KV_API int32_t wmbt_kv_put_blocks_ex(wmbt_kv_handle_t* handle, const char* namespace_,
                                          const char* fingerprint_hex,
                                          const char* const* keys_hex,
                                          const char* const* parent_keys_hex,
                                          const uint8_t* const* payloads, const size_t* lens,
                                          size_t count, char* out_hashes, char* err_buf,
                                          size_t err_len);

/* Zero-copy puts. wmbt_kv_payload_alloc returns a buffer of len bytes (up to 256 MiB) for the
 * engine to fill in place (*out_data); wmbt_kv_put_blocks_owned then stores the filled buffers
 * without copying them. Returns NULL (and sets last_error) on a bad length or out of memory.
 * wmbt_kv_payload_free releases a payload that is never put (NULL is a no-op). */
WMBT_KV_API wmbt_kv_payload_t* wmbt_kv_payload_alloc(size_t len, uint8_t** out_data);
WMBT_KV_API void wmbt_kv_payload_free(wmbt_kv_payload_t* payload);

/* As wmbt_kv_put_blocks_ex, with the payloads given as filled wmbt_kv_payload_t buffers. The call
 * takes ownership of every payloads[i] whatever its result: do not touch or free them after it.
 * One payload may be named by several blocks (it is released once). Only a count over
 * WMBT_KV_BATCH_BLOCKS_MAX leaves them with the caller: that error reads no array at all.
 * Identical behaviour otherwise: 0 (also for count 0) or -1. */
WMBT_KV_API int32_t wmbt_kv_put_blocks_owned(wmbt_kv_handle_t* handle, const char* namespace_,
                                             const char* fingerprint_hex,
                                             const char* const* keys_hex,
                                             const char* const* parent_keys_hex,
                                             wmbt_kv_payload_t* const* payloads, size_t count,
                                             char* out_hashes, char* err_buf, size_t err_len);

/* Publishes chain chain_id_hex (64 hex; NULL = the tip key) with tip tip_hex: the chain is the
 * blocks from the tip back to a root through parent links. Waits until every block is durable,
 * then writes the head atomically; the chain is visible when this returns.
 * expected_version < 0: last writer wins. expected_version >= 0: compare-and-swap, where 0 means
 * "the chain must not exist yet" and n means "the current version must be n".
 * Returns 0 with *out_version (if non-NULL) = the new version; 1 on a CAS conflict, with
 * out_current_tip_hex (NULL or WMBT_KV_KEY_HEX_BUF bytes) and *out_current_version (if non-NULL)
 * set to the chain's current tip and version (64 zeros and 0 if it has none) so the caller can
 * rebase; -1 on error (e.g. a block of the chain was never put; FAILED_PRECONDITION for a
 * compare-and-swap on an S3 server that does not honour conditional writes: docs/s3.md). */
WMBT_KV_API int32_t wmbt_kv_publish_chain(wmbt_kv_handle_t* handle, const char* namespace_,
                                          const char* fingerprint_hex, const char* chain_id_hex,
                                          const char* tip_hex, int64_t expected_version,
                                          uint64_t* out_version, char* out_current_tip_hex,
                                          uint64_t* out_current_version, char* err_buf,
                                          size_t err_len);

/* Borrows a payload by content hash (40 hex), published or not. Returns 1 on a hit
 * (*out_bytes and *out_len owned by *out_borrow), 0 on a miss (outputs untouched), -1 on error. */
WMBT_KV_API int32_t wmbt_kv_get_by_content_hash_borrowed(wmbt_kv_handle_t* handle,
                                                         const char* namespace_,
                                                         const char* content_hash_hex,
                                                         const uint8_t** out_bytes,
                                                         size_t* out_len,
                                                         wmbt_kv_borrow_t** out_borrow,
                                                         char* err_buf, size_t err_len);

/* wmbt_kv_put_raw_tail with an explicit fingerprint. Returns 0 or -1. */
WMBT_KV_API int32_t wmbt_kv_put_raw_tail_ex(wmbt_kv_handle_t* handle, const char* namespace_,
                                            const char* fingerprint_hex,
                                            const char* chain_tip_hash_hex, const uint8_t* bytes,
                                            size_t len, char* err_buf, size_t err_len);

/* wmbt_kv_get_raw_tail_borrowed with an explicit fingerprint. Returns 1 hit, 0 miss, -1 error. */
WMBT_KV_API int32_t wmbt_kv_get_raw_tail_borrowed_ex(wmbt_kv_handle_t* handle,
                                                     const char* namespace_,
                                                     const char* fingerprint_hex,
                                                     const char* chain_tip_hash_hex,
                                                     const uint8_t** out_bytes, size_t* out_len,
                                                     wmbt_kv_borrow_t** out_borrow, char* err_buf,
                                                     size_t err_len);

/* Loads what other processes or hosts published to L2 since the last look, so it becomes
 * visible to this handle's lookups. Returns 0, or -1 on error. */
WMBT_KV_API int32_t wmbt_kv_refresh(wmbt_kv_handle_t* handle, char* err_buf, size_t err_len);

/* Writes the store's statistics as one JSON object + NUL into buf. *out_needed (if non-NULL)
 * receives the bytes written including the NUL. Returns 0, or -1 if buf is too small (then the
 * last error's code is RESOURCE_EXHAUSTED and *out_needed tells the size to retry with, with room
 * for the counters to grow meanwhile; buf may be NULL with buf_len 0 to ask) or on error.
 * Fields: "abi_version", "l2" (where the store keeps its blocks) and the store's counters by name
 * (puts, gets, hits and misses per plane, bytes, publishes, evictions, ...), each a number;
 * docs/stats.md lists them. New fields may appear in later versions; none disappears. Through
 * wombatkvd the counters are the daemon's; a daemon that cannot be reached is -1 with
 * UNAVAILABLE (never zeros). */
WMBT_KV_API int32_t wmbt_kv_stats_json(wmbt_kv_handle_t* handle, char* buf, size_t buf_len,
                                       size_t* out_needed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WOMBATKV_H_ */
