// S3ObjectStore: the ObjectStore (object_store.h) over an S3-compatible bucket — AWS S3, Ceph
// radosgw, MinIO, moto. S3 is WombatKV's source of truth (SPEC §3); see docs/s3.md.
//
// Mapping of the contract:
//   Put        PutObject; kIfAbsent sends `If-None-Match: *`, kIfMatch `If-Match: <etag>` with
//              the ETag unquoted (radosgw answers 412 to a quoted one). Unconditional objects
//              above `multipart_threshold_bytes` go up as a multipart upload; conditional ones
//              are always one PutObject (up to 5 GiB), because radosgw ignores conditions on
//              CompleteMultipartUpload.
//   Get        GetObject with `Range`; Head HeadObject; Delete DeleteObject; DeleteMany
//              DeleteObjects (batches of 1000).
//   List       ListObjectsV2 with prefix, delimiter and `start-after`: our continuation token is
//              the last entry of the previous page (object_key.h rule 2), so tokens are plain keys
//              that any server — and any other implementation — understands.
//   ETags are stored and returned without quotes.
//
// Errors (every message names the operation, the key, the S3 error code and the request id, and
// never a secret): 404 NoSuchKey → NotFound (Conflict for kIfMatch); 404 NoSuchBucket →
// FailedPrecondition; 412 and 409 → Conflict; 403 → FailedPrecondition ("check
// WMBT_KV_S3_ACCESS_KEY/SECRET"); other 4xx → InvalidArgument (never retried); 5xx, 429,
// timeouts and resets are retried with backoff and jitter, then Unavailable.
//
// Conditional writes: Probe() checks that the server honours them. If it does not, Put still
// works but kIfAbsent/kIfMatch are emulated with a HEAD before the PUT — last writer wins, not a
// CAS — and HonoursConditionalWrites() is false: the store refuses CAS publishes (store.h).
//
// Thread-safety: every method may be called concurrently (object_store.h). At most
// `requests_inflight_max` requests are in flight; connections are reused.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv {

namespace s3 {
class Http;
struct HttpFault;
struct HttpRequest;
}  // namespace s3

// What an upload sends as `x-amz-content-sha256` (docs/s3.md, "Payload signing").
enum class S3PayloadSigning : uint8_t {
  kAuto,      // unsigned over https:// and on a loopback endpoint, signed otherwise
  kSigned,    // the SHA-256 of every body: the server recomputes and compares it
  kUnsigned,  // UNSIGNED-PAYLOAD: headers signed, body not hashed (no CPU per byte on either side)
};

enum class S3Addressing : uint8_t {
  kAuto,           // virtual-hosted for AWS (no endpoint) and dot-free buckets, else path-style
  kPath,           // http(s)://host/bucket/key
  kVirtualHosted,  // http(s)://bucket.host/key
};

struct S3Options {
  // scheme://host[:port], e.g. http://127.0.0.1:7480. Empty: https://s3.<region>.amazonaws.com.
  std::string endpoint;
  std::string bucket;  // REQUIRED
  std::string region = "us-east-1";
  std::string access_key;  // empty: anonymous requests (no signature)
  std::string secret_key;  // never printed
  // Prepended to every key and stripped from listings: "" or '/'-terminated valid key segments.
  std::string key_prefix;
  S3Addressing addressing = S3Addressing::kAuto;
  S3PayloadSigning payload_signing = S3PayloadSigning::kAuto;
  // PEM file of the CAs an https:// endpoint is verified against; empty = the system store.
  std::string ca_file;

  size_t requests_inflight_max = 32;  // pooled connections
  uint32_t connect_timeout_ms = 5000;
  uint32_t request_timeout_ms = 120000;
  uint32_t stalled_ms = 30000;  // an attempt that moves no byte this long ends (HttpConfig)
  uint32_t retries_max = 5;  // after the first attempt
  uint32_t backoff_base_ms = 50;
  uint32_t backoff_max_ms = 5000;
  uint64_t multipart_threshold_bytes = 64ull << 20;
  uint64_t multipart_part_bytes = 16ull << 20;  // S3: at least 5 MiB (except the last)
  // Parts of one multipart upload in flight at once (each also holds one pooled connection).
  size_t multipart_parts_inflight_max = 8;

  bool create_bucket = false;          // Probe() creates a missing bucket
  bool allow_dev_credentials = false;  // WMBT_KV_LOCAL_DEV=1: minioadmin off loopback

  Clock* clock = nullptr;    // not owned; null = RealClock()
  Random* random = nullptr;  // not owned; null = a system-seeded one owned by the store
};

inline constexpr uint64_t kS3PartBytesMin = 5ull << 20;
inline constexpr uint64_t kS3SinglePutBytesMax = 5ull << 30;
inline constexpr uint32_t kS3PartsMax = 10000;
inline constexpr size_t kS3DeleteBatchKeysMax = 1000;

class S3ObjectStore final : public ObjectStore {
 public:
  // Checks the options and prepares the connection pool; does no network I/O (see Probe).
  // InvalidArgument for a malformed endpoint, bucket, prefix or part size; FailedPrecondition for
  // the well-known development credentials (minioadmin/minioadmin) on a non-loopback endpoint
  // without allow_dev_credentials (SPEC §10), and for a ca_file that cannot be read.
  static Result<std::unique_ptr<S3ObjectStore>> Open(S3Options options);
  ~S3ObjectStore() override;

  std::string Describe() const override;  // "s3://bucket/prefix at endpoint"
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override;
  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override;
  ObjectStoreCounters Counters() const override;
  Status Reachability() const override;
  bool HonoursConditionalWrites() const override { return conditional_writes_.load(); }

  // Deletes every key (absent ones are fine), up to 1000 per request.
  Status DeleteMany(const std::vector<std::string>& keys);
  // CreateBucket in the configured region; OK if it already exists and is ours.
  Status CreateBucket();
  // Deletes the (empty) bucket. For tests.
  Status DeleteBucket();

  // The start-up probe: the bucket is reachable (created if missing and create_bucket), the
  // credentials are valid, and conditional writes work (put-if-absent twice on a probe key
  // "<probe_prefix>.wombatkv-probe-<random>": the second must be Conflict; an If-Match with a
  // wrong ETag must be Conflict). The probe key is deleted afterwards.
  // OK also when conditional writes are unsupported: then HonoursConditionalWrites() turns false
  // and `warning` (if given) receives a clear explanation.
  // FailedPrecondition: missing bucket, bad credentials, wrong region; Unavailable: unreachable.
  Status Probe(std::string_view probe_prefix = "", std::string* warning = nullptr);
  // Whether uploads carry the SHA-256 of their body (payload_signing resolved for the endpoint).
  bool payload_signed() const;

  const S3Options& options() const { return options_; }
  // Tests: inject transport faults (503s, resets, truncated bodies) before each attempt.
  void SetFaultHookForTesting(std::function<s3::HttpFault(const s3::HttpRequest&, uint32_t)> hook);

 private:
  explicit S3ObjectStore(S3Options options);
  Result<std::string> PutSingle(const std::string& full_key, std::string_view key,
                                const std::vector<ByteView>& parts, const PutOptions& options);
  Result<std::string> PutMultipart(const std::string& full_key, std::string_view key,
                                   const std::vector<ByteView>& parts, uint64_t size);
  Result<std::string> PutEmulatedConditional(const std::string& full_key, std::string_view key,
                                             const std::vector<ByteView>& parts,
                                             const PutOptions& options);
  Result<ObjectInfo> HeadFull(const std::string& full_key, std::string_view key);
  std::string Scrub(std::string message) const;  // removes the secret, should it ever appear

  S3Options options_;
  std::unique_ptr<Random> owned_random_;
  std::unique_ptr<s3::Http> http_;
  std::atomic<bool> conditional_writes_{true};
};

// True for localhost, 127.0.0.0/8 and ::1 endpoints (scheme://host[:port]).
bool IsLoopbackEndpoint(std::string_view endpoint);

// kAuto resolved: unsigned over https:// (TLS already protects the body in transit) and on a
// loopback endpoint (no network to corrupt it), signed for plain HTTP to any other host.
bool PayloadSigned(S3PayloadSigning policy, std::string_view endpoint);

}  // namespace wombatkv
