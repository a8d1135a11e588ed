// S3Http: one signed HTTP exchange with an S3-compatible server, over a pool of reused libcurl
// connections, with bounded retries. Internal to src/object/s3/: no libcurl type leaves s3_http.cc.
//
// What it does per request:
//   - builds the URL (path-style or virtual-hosted), with the query already in SigV4 canonical
//     form (names sorted, RFC 3986 encoding) because libcurl 7.88 signs the query as sent;
//   - sends `x-amz-content-sha256` (libcurl 7.88 does not add it, and radosgw/AWS reject SigV4
//     requests without it): the SHA-256 of the body, or UNSIGNED-PAYLOAD for a non-empty body
//     when `unsigned_payload`; libcurl signs with CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3";
//   - never adds header-removal entries ("Expect:" and the like): libcurl would sign them, and the
//     server, which never sees them, would answer 403;
//   - retries transport failures (connect/reset/timeouts/short bodies), 5xx, 429 and the transient
//     400 RequestTimeout with exponential backoff and full jitter (Clock/Random from env.h), at
//     most `retries_max` times; never any other 4xx.
//
// Ownership: the pool owns its CURL handles. Thread-safety: Execute may be called from any number
// of threads; at most `requests_inflight_max` requests are in flight, others wait for a handle.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wombatkv/buffer.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"
#include "wombatkv/status.h"

namespace wombatkv::s3 {

struct HttpConfig {
  std::string scheme;  // "http" or "https"
  std::string host;    // host[:port] of the endpoint (no bucket)
  std::string bucket;
  bool virtual_hosted = false;
  std::string region;
  std::string access_key;  // empty: unsigned (anonymous) requests
  std::string secret_key;
  bool unsigned_payload = false;  // bodies go as UNSIGNED-PAYLOAD, not hashed (docs/s3.md)
  std::string ca_file;            // CURLOPT_CAINFO; empty = libcurl's default (system CAs)
  size_t requests_inflight_max = 32;
  uint32_t connect_timeout_ms = 5000;
  uint32_t request_timeout_ms = 120000;
  // An attempt in which no byte moves either way for this long (rounded down to seconds, at
  // least 1) ends as stalled, before the request timeout.
  uint32_t stalled_ms = 30000;
  uint32_t retries_max = 5;
  uint32_t backoff_base_ms = 50;
  uint32_t backoff_max_ms = 5000;
  Clock* clock = nullptr;    // not owned
  Random* random = nullptr;  // not owned
};

struct HttpRequest {
  std::string_view method;  // GET, PUT, HEAD, DELETE, POST
  std::string key;          // full object key in the bucket; empty for bucket-level requests
  std::vector<std::pair<std::string, std::string>> query;  // raw values; encoded when sent
  std::vector<std::string> headers;                        // "Name: value"
  std::vector<ByteView> body;                              // concatenated
  // A response body longer than this is an error (not retried): bounds what a server can make
  // us allocate.
  uint64_t response_bytes_max = std::numeric_limits<uint64_t>::max();
  // The server may rightly send nothing for a long while (assembling a multipart upload): only
  // the request timeout ends it, not HttpConfig::stalled_ms.
  bool slow_answer = false;
};

struct HttpResponse {
  long status = 0;          // HTTP status of the last attempt
  std::string etag;         // unquoted
  std::string request_id;   // x-amz-request-id (or x-amz-id-2 / x-trans-id)
  std::string content_range;
  std::string last_modified;  // the Last-Modified header as sent (HEAD, GET)
  std::string date;           // the Date header as sent: the server's clock
  std::string bucket_region;  // x-amz-bucket-region (AWS names it on a wrong-region answer)
  uint64_t content_length = 0;
  bool has_content_length = false;
  std::shared_ptr<Buffer> data;  // the body (GET payloads and XML documents alike)
  uint32_t attempts = 0;         // 1 + retries made
  bool ambiguous = false;        // an earlier attempt may have reached the server and applied
  std::string text() const { return data ? std::string(AsChars(data->view())) : std::string(); }
};

// Fault injection for tests (the fault-injecting decorator, at the transport seam): called
// before each attempt; a non-OK outcome replaces the attempt.
struct HttpFault {
  enum class Kind : uint8_t {
    kNone,
    kConnectionReset,  // as a reset before any byte was sent: nothing applied
    kResetAfterApply,  // the request is performed, then the answer is lost (ambiguous)
    kStatus,           // the server answers `status` (e.g. 503 SlowDown) without applying
    kTruncatedBody,    // the request is performed, then the body is cut short
  };
  Kind kind = Kind::kNone;
  long status = 503;
  std::string code = "SlowDown";
};
using HttpFaultHook = std::function<HttpFault(const HttpRequest&, uint32_t attempt)>;

class Http {
 public:
  // REQUIRES: config.clock and config.random non-null.
  explicit Http(HttpConfig config);
  ~Http();
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;

  // Performs `request`, retrying transient failures. Returns the response of the last attempt for
  // any HTTP status that is not retried (the caller maps 4xx to Status), Unavailable once retries
  // are exhausted (message: what failed last, attempts, request id), or Internal for a local
  // libcurl setup failure. `what` names the operation and key in messages.
  Result<HttpResponse> Execute(const HttpRequest& request, std::string_view what);

  // OK while the last request was answered as by a working S3 server; after a request that was
  // not — no answer after the retries (Unavailable), a 5xx, credentials (401, 403) or the bucket
  // (NoSuchBucket) refused — Unavailable, saying since when and what failed last. A later answer
  // clears it.
  Status Reachability() const;

  // The S3 error code of an XML error body ("" if none), and its <Message>.
  static std::pair<std::string, std::string> ParseErrorBody(std::string_view xml);

  void set_fault_hook(HttpFaultHook hook) { fault_hook_ = std::move(hook); }
  const HttpConfig& config() const { return config_; }
  ObjectStoreCounters Counters() const {
    return {attempts_.load(std::memory_order_relaxed), retries_.load(std::memory_order_relaxed),
            throttled_.load(std::memory_order_relaxed)};
  }

 private:
  struct Pool;
  HttpConfig config_;
  std::unique_ptr<Pool> pool_;
  HttpFaultHook fault_hook_;
  std::atomic<uint64_t> attempts_{0}, retries_{0}, throttled_{0};

  Result<HttpResponse> ExecuteOnce(const HttpRequest& request, std::string_view what);
  void RecordReachability(const Result<HttpResponse>& r);
  mutable std::mutex reach_mu_;
  uint64_t failing_since_us_ = 0;  // GUARDED_BY(reach_mu_): wall clock; 0 = answered
  std::string last_failure_;       // GUARDED_BY(reach_mu_)
};

// An attempt's whole-request timeout: HttpConfig::request_timeout_ms, plus one second for each
// kTimeoutBytesPerSecond bytes the request may move (its body, and a bounded answer): a 1 GiB
// sidecar on a slow link keeps moving and must not be cut at the same point as a HEAD. A server
// that moves nothing is caught sooner, as stalled (HttpConfig::stalled_ms).
inline constexpr uint64_t kTimeoutBytesPerSecond = 1 << 20;
uint64_t RequestTimeoutMs(const HttpConfig& c, const HttpRequest& r, uint64_t body_bytes);

// Lowercase hex SHA-256 and MD5 of the concatenated parts (OpenSSL EVP).
std::string Sha256Hex(const std::vector<ByteView>& parts);
std::string Md5Hex(const std::vector<ByteView>& parts);
// Base64 of the binary MD5 (the Content-MD5 header).
std::string Md5Base64(const std::vector<ByteView>& parts);
// RFC 3986 percent-encoding of everything but unreserved characters (SigV4 canonical form).
std::string UriEncode(std::string_view s, bool keep_slash);

// Times S3 sends, as µs since the Unix epoch; 0 if `text` is not in the expected form.
// ISO 8601 as in ListObjectsV2's LastModified: "2024-05-06T07:08:09.123Z".
uint64_t ParseIso8601Micros(std::string_view text);
// An HTTP date (RFC 9110 IMF-fixdate) as in Last-Modified: "Mon, 06 May 2024 07:08:09 GMT".
uint64_t ParseHttpDateMicros(std::string_view text);

}  // namespace wombatkv::s3
