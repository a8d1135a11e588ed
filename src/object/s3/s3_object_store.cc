// S3ObjectStore: ObjectStore calls as S3 requests, and S3 answers as Status (see the header).
#include "object/s3/s3_object_store.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <optional>
#include <pugixml.hpp>
#include <system_error>
#include <thread>

#include "base/check.h"
#include "base/hex.h"
#include "object/object_key.h"
#include "object/s3/s3_http.h"

namespace wombatkv {
namespace {

using s3::Http;
using s3::HttpRequest;
using s3::HttpResponse;

std::string StripQuotes(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

// "HTTP 403 AccessDenied (request id X): message".
std::string Detail(const HttpResponse& r, const std::string& code, const std::string& message) {
  std::string s = "HTTP " + std::to_string(r.status);
  if (!code.empty()) s += " " + code;
  s += " (request id " + (r.request_id.empty() ? std::string("-") : r.request_id) + ")";
  if (!message.empty()) s += ": " + message;
  return s;
}

struct Endpoint {
  std::string scheme;
  std::string host;  // host[:port]
  std::string hostname;
};

// Names every way the endpoint is given: the message cannot tell which one was.
constexpr std::string_view kEndpointSetting =
    "the S3 endpoint (--s3-endpoint, WMBT_KV_S3_ENDPOINT or AWS_ENDPOINT_URL) \"";

Result<Endpoint> ParseEndpoint(std::string_view url) {
  Endpoint e;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument(std::string(kEndpointSetting) + std::string(url) +
                                   "\" is not an http:// or https:// URL");
  }
  e.scheme = std::string(url.substr(0, sep));
  if (e.scheme != "http" && e.scheme != "https") {
    return Status::InvalidArgument(std::string(kEndpointSetting) + std::string(url) +
                                   "\": the scheme must be http or https");
  }
  std::string_view rest = url.substr(sep + 3);
  while (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.empty() || rest.find('/') != std::string_view::npos ||
      rest.find('@') != std::string_view::npos || rest.find('?') != std::string_view::npos) {
    return Status::InvalidArgument(
        std::string(kEndpointSetting) + std::string(url) +
        "\": expected scheme://host[:port] with no path (the bucket is WMBT_KV_BUCKET)");
  }
  for (char c : rest) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
    if (!ok) {
      return Status::InvalidArgument(std::string(kEndpointSetting) + std::string(url) +
                                     "\": unexpected character in the host");
    }
  }
  e.host = std::string(rest);
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    e.hostname = std::string(rest.substr(0, close == std::string_view::npos ? rest.size()
                                                                              : close + 1));
  } else {
    e.hostname = std::string(rest.substr(0, rest.find(':')));
  }
  return e;
}

bool IsKeyPrefixValid(std::string_view p) {
  if (p.empty()) return true;
  if (p.back() != '/') return false;
  return ValidateObjectKey(p.substr(0, p.size() - 1)).ok();
}

}  // namespace

bool PayloadSigned(S3PayloadSigning policy, std::string_view endpoint) {
  switch (policy) {
    case S3PayloadSigning::kSigned:
      return true;
    case S3PayloadSigning::kUnsigned:
      return false;
    case S3PayloadSigning::kAuto:
      break;
  }
  return !(endpoint.starts_with("https://") || IsLoopbackEndpoint(endpoint));
}

bool IsLoopbackEndpoint(std::string_view endpoint) {
  auto e = ParseEndpoint(endpoint);
  if (!e.ok()) return false;
  const std::string& h = e->hostname;
  if (h == "localhost" || h == "[::1]" || h == "ip6-localhost") return true;
  if (!h.starts_with("127.")) return false;
  int dots = 0;
  for (char c : h) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3;
}

// ---- construction ----

Result<std::unique_ptr<S3ObjectStore>> S3ObjectStore::Open(S3Options options) {
  if (options.bucket.size() < 3 || options.bucket.size() > 63) {
    return Status::InvalidArgument("S3 bucket name \"" + options.bucket +
                                   "\" must have 3 to 63 characters");
  }
  for (char c : options.bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) {
      return Status::InvalidArgument("S3 bucket name \"" + options.bucket +
                                     "\" may contain only [a-z0-9.-]");
    }
  }
  if (options.endpoint.empty()) {
    options.endpoint = "https://s3." + options.region + ".amazonaws.com";
  }
  WMBT_ASSIGN_OR_RETURN(Endpoint ep, ParseEndpoint(options.endpoint));
  (void)ep;
  if (!IsKeyPrefixValid(options.key_prefix)) {
    return Status::InvalidArgument("S3 key prefix \"" + options.key_prefix +
                                   "\" must be empty or valid key segments ending in '/'");
  }
  if (options.multipart_part_bytes < kS3PartBytesMin ||
      options.multipart_threshold_bytes < options.multipart_part_bytes) {
    return Status::InvalidArgument(
        "S3 multipart: parts must be at least 5 MiB and the threshold at least one part");
  }
  if (options.multipart_parts_inflight_max == 0) {
    return Status::InvalidArgument("S3 multipart: at least one part must be in flight");
  }
  // libcurl reads the file only at the first https request; saying so now names the setting.
  if (!options.ca_file.empty() && ::access(options.ca_file.c_str(), R_OK) != 0) {
    const std::string why = std::error_code(errno, std::generic_category()).message();
    return Status::FailedPrecondition(
        "the S3 CA file " + options.ca_file + " cannot be read (" + why +
        "): point WMBT_KV_S3_CA_FILE (or AWS_CA_BUNDLE) at a readable PEM file of the CA "
        "certificates that sign the endpoint's certificate, or unset it to use the system CAs");
  }
  if (options.access_key == "minioadmin" && options.secret_key == "minioadmin" &&
      !IsLoopbackEndpoint(options.endpoint) && !options.allow_dev_credentials) {
    return Status::FailedPrecondition(
        "refusing the well-known development credentials (minioadmin) for the non-loopback S3 "
        "endpoint " +
        options.endpoint +
        ": set real WMBT_KV_S3_ACCESS_KEY/WMBT_KV_S3_SECRET_KEY, or WMBT_KV_LOCAL_DEV=1 for a "
        "development server");
  }
  return std::unique_ptr<S3ObjectStore>(new S3ObjectStore(std::move(options)));
}

S3ObjectStore::S3ObjectStore(S3Options options) : options_(std::move(options)) {
  if (!options_.clock) options_.clock = RealClock();
  if (!options_.random) {
    owned_random_ = NewSystemRandom();
    options_.random = owned_random_.get();
  }
  Endpoint ep = ParseEndpoint(options_.endpoint).value();
  s3::HttpConfig hc;
  hc.scheme = ep.scheme;
  hc.host = ep.host;
  hc.bucket = options_.bucket;
  const bool aws = ep.hostname.ends_with(".amazonaws.com");
  switch (options_.addressing) {
    case S3Addressing::kAuto:
      hc.virtual_hosted = aws && options_.bucket.find('.') == std::string::npos;
      break;
    case S3Addressing::kPath:
      hc.virtual_hosted = false;
      break;
    case S3Addressing::kVirtualHosted:
      hc.virtual_hosted = true;
      break;
  }
  hc.region = options_.region;
  hc.unsigned_payload = !PayloadSigned(options_.payload_signing, options_.endpoint);
  hc.ca_file = options_.ca_file;
  hc.access_key = options_.access_key;
  hc.secret_key = options_.secret_key;
  hc.requests_inflight_max = options_.requests_inflight_max;
  hc.connect_timeout_ms = options_.connect_timeout_ms;
  hc.request_timeout_ms = options_.request_timeout_ms;
  hc.stalled_ms = options_.stalled_ms;
  hc.retries_max = options_.retries_max;
  hc.backoff_base_ms = options_.backoff_base_ms;
  hc.backoff_max_ms = options_.backoff_max_ms;
  hc.clock = options_.clock;
  hc.random = options_.random;
  http_ = std::make_unique<Http>(std::move(hc));
}

S3ObjectStore::~S3ObjectStore() = default;

bool S3ObjectStore::payload_signed() const { return !http_->config().unsigned_payload; }

void S3ObjectStore::SetFaultHookForTesting(
    std::function<s3::HttpFault(const s3::HttpRequest&, uint32_t)> hook) {
  http_->set_fault_hook(std::move(hook));
}

Status S3ObjectStore::Reachability() const {
  Status s = http_->Reachability();
  return s.ok() ? s : Status(s.code(), Scrub(s.message()));
}

std::string S3ObjectStore::Describe() const {
  return "s3://" + options_.bucket + "/" + options_.key_prefix + " at " + options_.endpoint;
}

std::string S3ObjectStore::Scrub(std::string message) const {
  const std::string& secret = options_.secret_key;
  if (secret.size() >= 4) {
    for (size_t at = message.find(secret); at != std::string::npos;
         at = message.find(secret, at)) {
      message.replace(at, secret.size(), "(secret)");
    }
  }
  return message;
}

// ---- error mapping: the one place S3 answers become Status codes ----

namespace {

// How far this host's clock is from the S3 server's, by the answer's Date header, in whole
// minutes (positive: ahead); nullopt without a Date header.
std::optional<int64_t> ClockAheadMinutes(const HttpResponse& r, const S3Options& o) {
  const uint64_t server = s3::ParseHttpDateMicros(r.date);
  if (server == 0) return std::nullopt;
  return (static_cast<int64_t>(o.clock->WallMicros()) - static_cast<int64_t>(server)) / 60'000'000;
}

// "2h 3m ahead of" / "0h 7m behind".
std::string Skew(int64_t ahead_minutes) {
  const uint64_t m = static_cast<uint64_t>(ahead_minutes < 0 ? -ahead_minutes : ahead_minutes);
  return std::to_string(m / 60) + "h " + std::to_string(m % 60) + "m " +
         (ahead_minutes > 0 ? "ahead of" : "behind");
}

Status MapErrorUnscrubbed(const HttpResponse& r, std::string_view op, std::string_view key,
                          const S3Options& o) {
  auto [code, message] = Http::ParseErrorBody(r.text());
  const std::string where = "s3 " + std::string(op) + " " +
                            (key.empty() ? "s3://" + o.bucket : std::string(key)) + ": ";
  const std::string detail = Detail(r, code, message);
  // AWS answers a request signed for the wrong region (a HEAD: a 400 with no body) naming the
  // bucket's region in a header: then that is what to fix.
  if (r.status >= 300 && r.status < 500 && !r.bucket_region.empty() &&
      r.bucket_region != o.region) {
    return Status::FailedPrecondition(where + detail + "; bucket " + o.bucket + " is in region " +
                                      r.bucket_region + ", not " + o.region +
                                      ": set WMBT_KV_S3_REGION=" + r.bucket_region);
  }
  switch (r.status) {
    case 404: {
      // The start-up probe (and the creation it may make) meets a missing bucket; any other
      // request found it gone after the probe saw it.
      const bool probe = op == "head bucket" || op == "create bucket";
      if (code == "NoSuchBucket" && !probe) {
        return Status::FailedPrecondition(
            where + detail + "; bucket " + o.bucket + " no longer exists at " + o.endpoint +
            " (deleted while in use?): create it again" +
            (o.create_bucket ? "" : ", or restart with WMBT_KV_S3_CREATE_BUCKET=1"));
      }
      if (code == "NoSuchBucket" || (key.empty() && code.empty())) {
        // A HEAD answer has no body: an S3 server still sends its request id.
        const std::string or_not_s3 =
            code.empty() && r.request_id.empty()
                ? ", or " + o.endpoint +
                      " is not an S3 server (its answer had no S3 request id): check "
                      "WMBT_KV_S3_ENDPOINT"
                : "";
        return Status::FailedPrecondition(
            where + detail + "; bucket " + o.bucket + " does not exist at " + o.endpoint +
            or_not_s3 +
            (o.create_bucket
                 ? " even to a request that creates it: the server may not know itself by this "
                   "host name (try the one it is configured for) or want the other addressing "
                   "(WMBT_KV_S3_ADDRESSING=path or virtual)"
                 : " (create it, or set WMBT_KV_S3_CREATE_BUCKET=1)"));
      }
      return Status::NotFound(where + detail);
    }
    case 409:
    case 412:
      return Status::Conflict(where + detail);
    case 401:
    case 403: {
      // S3 refuses a request signed 15 minutes or more off its clock: then that is the cause.
      const std::optional<int64_t> ahead = ClockAheadMinutes(r, o);
      if (ahead && (*ahead >= 15 || *ahead <= -15)) {
        return Status::FailedPrecondition(
            where + detail + "; this host's clock is " + Skew(*ahead) +
            " the S3 server's (its Date header), and requests signed 15 minutes or more off are "
            "refused: set the clock right (NTP)");
      }
      if (o.access_key.empty()) {
        return Status::FailedPrecondition(
            where + detail +
            "; no credentials are set, so the requests went unsigned: set "
            "WMBT_KV_S3_ACCESS_KEY and WMBT_KV_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY)");
      }
      if (o.secret_key.empty()) {
        return Status::FailedPrecondition(where + detail +
                                          "; an access key is set but no secret key: set "
                                          "WMBT_KV_S3_SECRET_KEY (or AWS_SECRET_ACCESS_KEY)");
      }
      return Status::FailedPrecondition(
          where + detail + "; check WMBT_KV_S3_ACCESS_KEY/SECRET (or AWS_ACCESS_KEY_ID/" +
          "AWS_SECRET_ACCESS_KEY), WMBT_KV_S3_REGION (" + o.region + ") and the clock" +
          (ahead && *ahead != 0 ? " (" + Skew(*ahead) + " the server's)" : ""));
    }
    case 301:
    case 307:
      return Status::FailedPrecondition(where + detail + "; the bucket is in another region than " +
                                        o.region + " or behind another endpoint");
    case 501:
      return Status::FailedPrecondition(where + detail + "; the server does not implement this");
    default:
      break;
  }
  if (code == "AuthorizationHeaderMalformed") {
    return Status::FailedPrecondition(where + detail + "; check WMBT_KV_S3_REGION (" + o.region +
                                      ")");
  }
  if (r.status >= 400 && r.status < 500) return Status::InvalidArgument(where + detail);
  return Status::Internal(where + "unexpected answer " + detail);
}

// The server's text goes into messages: make sure the secret never does (SPEC §10).
Status MapError(const HttpResponse& r, std::string_view op, std::string_view key,
                const S3Options& o) {
  Status s = MapErrorUnscrubbed(r, op, key, o);
  std::string m = s.message();
  if (o.secret_key.size() >= 4) {
    for (size_t at = m.find(o.secret_key); at != std::string::npos; at = m.find(o.secret_key, at)) {
      m.replace(at, o.secret_key.size(), "(secret)");
    }
  }
  return Status(s.code(), std::move(m));
}

}  // namespace

// ---- put ----

Result<std::string> S3ObjectStore::Put(std::string_view key, const std::vector<ByteView>& parts,
                                       const PutOptions& options) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  if (options.mode == PutMode::kIfMatch && options.if_match.empty()) {
    return Status::InvalidArgument("put " + std::string(key) + ": if-match with an empty etag");
  }
  uint64_t size = 0;
  for (ByteView p : parts) size += p.size();
  const std::string full = options_.key_prefix + std::string(key);
  if (options.mode != PutMode::kOverwrite && !conditional_writes_.load()) {
    return PutEmulatedConditional(full, key, parts, options);
  }
  if (options.mode == PutMode::kOverwrite && size > options_.multipart_threshold_bytes) {
    return PutMultipart(full, key, parts, size);
  }
  if (size > kS3SinglePutBytesMax) {
    return Status::InvalidArgument("put " + std::string(key) + ": a conditional write of " +
                                   std::to_string(size) + " bytes is over S3's single-PUT limit");
  }
  return PutSingle(full, key, parts, options);
}

Result<std::string> S3ObjectStore::PutSingle(const std::string& full, std::string_view key,
                                             const std::vector<ByteView>& parts,
                                             const PutOptions& options) {
  HttpRequest req;
  req.method = "PUT";
  req.key = full;
  req.body = parts;
  req.headers.push_back("Content-Type: application/octet-stream");
  if (options.mode == PutMode::kIfAbsent) req.headers.push_back("If-None-Match: *");
  if (options.mode == PutMode::kIfMatch) {
    req.headers.push_back("If-Match: " + StripQuotes(options.if_match));
  }
  auto r = http_->Execute(req, "put " + full);
  if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
  if (r->status == 200) {
    if (r->etag.empty()) {
      return Status::Internal("s3 put " + full + ": the server returned no ETag (request id " +
                              r->request_id + ")");
    }
    return r->etag;
  }
  if (options.mode != PutMode::kOverwrite && r->ambiguous &&
      (r->status == 412 || r->status == 409)) {
    // An earlier attempt may have been applied before its answer was lost; then the "conflict"
    // is with ourselves. S3's ETag of a single PUT is the MD5 of the content.
    auto head = HeadFull(full, key);
    if (head.ok() && head->etag == s3::Md5Hex(parts)) return head->etag;
  }
  if (options.mode == PutMode::kIfMatch && r->status == 404) {
    return Status::Conflict("s3 put " + full + ": if-match " + options.if_match +
                            ", but the object does not exist (" + Detail(*r, "NoSuchKey", "") +
                            ")");
  }
  return MapError(*r, "put", full, options_);
}

Result<std::string> S3ObjectStore::PutEmulatedConditional(const std::string& full,
                                                          std::string_view key,
                                                          const std::vector<ByteView>& parts,
                                                          const PutOptions& options) {
  // Last writer wins: the check and the write are two requests (docs/s3.md).
  auto head = HeadFull(full, key);
  if (!head.ok() && !head.status().IsNotFound()) return head.status();
  if (options.mode == PutMode::kIfAbsent && head.ok()) {
    return Status::Conflict("s3 put " + full + ": exists (emulated if-none-match)");
  }
  if (options.mode == PutMode::kIfMatch &&
      (!head.ok() || head->etag != StripQuotes(options.if_match))) {
    return Status::Conflict("s3 put " + full + ": etag is not " + options.if_match +
                            " (emulated if-match)");
  }
  uint64_t size = 0;
  for (ByteView p : parts) size += p.size();
  if (size > options_.multipart_threshold_bytes) return PutMultipart(full, key, parts, size);
  return PutSingle(full, key, parts, PutOptions{});
}

Result<std::string> S3ObjectStore::PutMultipart(const std::string& full, std::string_view key,
                                                const std::vector<ByteView>& parts,
                                                uint64_t size) {
  uint64_t part_bytes = options_.multipart_part_bytes;
  if ((size + part_bytes - 1) / part_bytes > kS3PartsMax) {
    part_bytes = (size + kS3PartsMax - 1) / kS3PartsMax;
  }
  // 1. Create.
  HttpRequest init;
  init.method = "POST";
  init.key = full;
  init.query = {{"uploads", ""}};
  init.headers.push_back("Content-Type: application/octet-stream");
  auto ir = http_->Execute(init, "create multipart upload " + full);
  if (!ir.ok()) return Status(ir.status().code(), Scrub(ir.status().message()));
  if (ir->status != 200) return MapError(*ir, "create multipart upload", full, options_);
  std::string upload_id;
  {
    pugi::xml_document doc;
    std::string text = ir->text();
    if (doc.load_buffer(text.data(), text.size())) {
      upload_id = doc.child("InitiateMultipartUploadResult").child_value("UploadId");
    }
  }
  if (upload_id.empty()) {
    return Status::Internal("s3 create multipart upload " + full + ": no UploadId (request id " +
                            ir->request_id + ")");
  }
  auto abort = [&](Status s) -> Status {
    HttpRequest req;
    req.method = "DELETE";
    req.key = full;
    req.query = {{"uploadId", upload_id}};
    auto aborted = http_->Execute(req, "abort multipart upload " + full);
    std::string left;
    if (!aborted.ok() || aborted->status / 100 != 2) {
      // Parts no listing shows, billed until removed: say so, and how.
      left = "; its parts could not be aborted (upload id " + upload_id +
             "): they stay in the bucket until a lifecycle rule with "
             "AbortIncompleteMultipartUpload removes them (docs/s3.md)";
    }
    return Status(s.code(), Scrub(s.message() + left));
  };

  // 2. Parts: slices of `parts`, each part_bytes long (the last shorter).
  std::vector<std::vector<ByteView>> bodies;
  size_t vi = 0, voff = 0;
  for (uint64_t done = 0; done < size;) {
    const uint64_t want = std::min<uint64_t>(part_bytes, size - done);
    std::vector<ByteView> slices;
    for (uint64_t got = 0; got < want;) {
      ByteView p = parts[vi];
      const size_t take = static_cast<size_t>(std::min<uint64_t>(want - got, p.size() - voff));
      if (take > 0) slices.push_back(p.subspan(voff, take));
      got += take;
      voff += take;
      if (voff == p.size()) {
        ++vi;
        voff = 0;
      }
    }
    bodies.push_back(std::move(slices));
    done += want;
  }
  // Uploaded by up to multipart_parts_inflight_max workers (the calling thread is one), each
  // taking the next part: one part at a time would leave a multipart upload at the speed of one
  // connection. The first failure stops new parts from starting; the upload is then aborted.
  // Plain threads rather than the store's Executor: every worker blocks in libcurl for a whole
  // part, and an upload task waiting on its own pool could starve it.
  std::vector<std::string> etags(bodies.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status first_error;
  auto worker = [&] {
    for (size_t i; !failed.load() && (i = next.fetch_add(1)) < bodies.size();) {
      const std::string number = std::to_string(i + 1);
      HttpRequest up;
      up.method = "PUT";
      up.key = full;
      up.query = {{"partNumber", number}, {"uploadId", upload_id}};
      up.body = bodies[i];
      auto pr = http_->Execute(up, "upload part " + number + " of " + full);
      Status st;
      if (!pr.ok()) st = pr.status();
      else if (pr->status != 200) st = MapError(*pr, "upload part " + number, full, options_);
      else if (pr->etag.empty()) st = Status::Internal("s3 upload part of " + full + ": no ETag");
      else etags[i] = pr->etag;
      if (!st.ok()) {
        std::lock_guard<std::mutex> g(error_mu);
        if (!failed.exchange(true)) first_error = std::move(st);
      }
    }
  };
  const size_t workers =
      std::min(bodies.size(), std::max<size_t>(1, options_.multipart_parts_inflight_max));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (failed.load()) return abort(first_error);

  // 3. Complete.
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" + etags[i] +
           "\"</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  HttpRequest done;
  done.method = "POST";
  done.key = full;
  done.query = {{"uploadId", upload_id}};
  done.slow_answer = true;
  done.headers.push_back("Content-Type: application/xml");
  done.body = {AsBytes(xml)};
  auto cr = http_->Execute(done, "complete multipart upload " + full);
  if (!cr.ok()) return abort(cr.status());
  if (cr->status == 404 && cr->ambiguous) {
    // An earlier attempt completed the upload and its answer was lost: the upload is gone
    // (NoSuchUpload) because it is the object now. A multipart ETag ends in "-<parts>".
    auto head = HeadFull(full, key);
    const std::string suffix = "-" + std::to_string(etags.size());
    if (head.ok() && head->size == size && head->etag.ends_with(suffix)) return head->etag;
  }
  if (cr->status != 200) return abort(MapError(*cr, "complete multipart upload", full, options_));
  // S3 may answer 200 with an <Error> document once the upload has started streaming.
  pugi::xml_document doc;
  std::string text = cr->text();
  if (!doc.load_buffer(text.data(), text.size())) {
    return abort(Status::Internal("s3 complete multipart upload " + full + ": unreadable answer"));
  }
  if (doc.child("Error")) {
    return abort(Status::Unavailable("s3 complete multipart upload " + full + ": " +
                                     doc.child("Error").child_value("Code") + " (request id " +
                                     cr->request_id + ")"));
  }
  std::string etag = StripQuotes(doc.child("CompleteMultipartUploadResult").child_value("ETag"));
  if (etag.empty()) etag = cr->etag;
  if (etag.empty()) {
    auto head = HeadFull(full, key);
    if (!head.ok()) return head.status();
    etag = head->etag;
  }
  return etag;
}

// ---- get / head / delete ----

Result<ObjectInfo> S3ObjectStore::HeadFull(const std::string& full, std::string_view key) {
  HttpRequest req;
  req.method = "HEAD";
  req.key = full;
  auto r = http_->Execute(req, "head " + full);
  if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
  if (r->status == 404) {
    return Status::NotFound("s3 head " + full + ": not found (request id " +
                            (r->request_id.empty() ? std::string("-") : r->request_id) + ")");
  }
  if (r->status != 200) return MapError(*r, "head", full, options_);
  return ObjectInfo{std::string(key), r->content_length, r->etag,
                    s3::ParseHttpDateMicros(r->last_modified)};
}

Result<ObjectInfo> S3ObjectStore::Head(std::string_view key) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  return HeadFull(options_.key_prefix + std::string(key), key);
}

Result<ObjectData> S3ObjectStore::Get(std::string_view key, uint64_t offset, uint64_t length) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  const std::string full = options_.key_prefix + std::string(key);
  auto past_end = [&](uint64_t size) {
    return Status::InvalidArgument("s3 get " + full + ": offset " + std::to_string(offset) +
                                   " is past the object size " + std::to_string(size));
  };
  // Answers that need no bytes: a HEAD says how big the object is.
  auto empty_at = [&]() -> Result<ObjectData> {
    auto head = HeadFull(full, key);
    if (!head.ok()) return head.status();
    if (offset > head->size) return past_end(head->size);
    ObjectData out;
    out.bytes = Buffer::Allocate(0);
    out.etag = head->etag;
    out.object_size = head->size;
    return out;
  };
  if (length == 0 || offset == kToEnd) return empty_at();  // (the range's end below needs < kToEnd)

  HttpRequest req;
  req.method = "GET";
  req.key = full;
  const bool ranged = offset > 0 || length != kToEnd;
  if (ranged) {
    std::string range = "Range: bytes=" + std::to_string(offset) + "-";
    if (length != kToEnd && length - 1 <= kToEnd - 1 - offset) {
      range += std::to_string(offset + length - 1);
    }
    req.headers.push_back(std::move(range));
    if (length != kToEnd) req.response_bytes_max = length;
  }
  auto r = http_->Execute(req, "get " + full);
  if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
  if (r->status == 416) return empty_at();  // offset at or past the end (or an empty object)
  if (r->status == 404) {
    auto [code, message] = Http::ParseErrorBody(r->text());
    if (code == "NoSuchBucket") return MapError(*r, "get", full, options_);
    return Status::NotFound("s3 get " + full + ": " + Detail(*r, code, ""));
  }
  ObjectData out;
  out.etag = r->etag;
  if (r->status == 200) {
    // The whole object (no range asked, or the server ignored it).
    out.object_size = r->data->size();
    if (offset > out.object_size) return past_end(out.object_size);
    const uint64_t n = std::min(length, out.object_size - offset);
    if (offset == 0 && n == out.object_size) {
      out.bytes = std::move(r->data);
    } else {
      out.bytes = Buffer::CopyOf(r->data->view().subspan(offset, n));
    }
    return out;
  }
  if (r->status == 206) {
    // Content-Range: bytes first-last/total
    unsigned long long first = 0, last = 0, total = 0;
    if (std::sscanf(r->content_range.c_str(), "bytes %llu-%llu/%llu", &first, &last, &total) != 3 ||
        first != offset || last < first || r->data->size() != last - first + 1) {
      return Status::Corruption("s3 get " + full + ": the server answered range \"" +
                                r->content_range + "\" with " + std::to_string(r->data->size()) +
                                " bytes for offset " + std::to_string(offset) + " (request id " +
                                r->request_id + ")");
    }
    out.object_size = total;
    out.bytes = std::move(r->data);
    return out;
  }
  return MapError(*r, "get", full, options_);
}

Status S3ObjectStore::Delete(std::string_view key) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  const std::string full = options_.key_prefix + std::string(key);
  HttpRequest req;
  req.method = "DELETE";
  req.key = full;
  auto r = http_->Execute(req, "delete " + full);
  if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
  if (r->status == 204 || r->status == 200) return Status::Ok();
  if (r->status == 404 && Http::ParseErrorBody(r->text()).first != "NoSuchBucket") {
    return Status::Ok();
  }
  return MapError(*r, "delete", full, options_);
}

Status S3ObjectStore::DeleteMany(const std::vector<std::string>& keys) {
  for (const std::string& k : keys) WMBT_RETURN_IF_ERROR(ValidateObjectKey(k));
  for (size_t start = 0; start < keys.size(); start += kS3DeleteBatchKeysMax) {
    const size_t end = std::min(keys.size(), start + kS3DeleteBatchKeysMax);
    std::string xml = "<Delete><Quiet>true</Quiet>";
    for (size_t i = start; i < end; ++i) {
      xml += "<Object><Key>" + options_.key_prefix + keys[i] + "</Key></Object>";
    }
    xml += "</Delete>";
    HttpRequest req;
    req.method = "POST";
    req.query = {{"delete", ""}};
    req.body = {AsBytes(xml)};
    req.headers.push_back("Content-Type: application/xml");
    req.headers.push_back("Content-MD5: " + s3::Md5Base64(req.body));
    auto r = http_->Execute(req, "delete objects");
    if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
    if (r->status != 200) return MapError(*r, "delete objects", "", options_);
    pugi::xml_document doc;
    std::string text = r->text();
    if (doc.load_buffer(text.data(), text.size())) {
      pugi::xml_node err = doc.child("DeleteResult").child("Error");
      if (err) {
        return Status::Unavailable("s3 delete objects: " + std::string(err.child_value("Key")) +
                                   ": " + err.child_value("Code") + " " +
                                   err.child_value("Message") + " (request id " + r->request_id +
                                   ")");
      }
    }
  }
  return Status::Ok();
}

// ---- list ----

ObjectStoreCounters S3ObjectStore::Counters() const { return http_->Counters(); }

Result<ListPage> S3ObjectStore::List(std::string_view prefix, std::string_view delimiter,
                                     std::string_view token, size_t max_keys) {
  WMBT_ASSIGN_OR_RETURN(size_t page_size, CheckListArgs(prefix, delimiter, max_keys));
  const std::string& kp = options_.key_prefix;
  ListPageBuilder page(page_size);
  size_t count = 0;
  std::string continuation;
  // Bounded: each round either fills the page, ends the listing or advances the server's cursor.
  for (int round = 0; round < 100000; ++round) {
    HttpRequest req;
    req.method = "GET";
    // One entry more than the page holds proves that the listing continues (object_key.h rule 3).
    const size_t want = std::min<size_t>(1000, page_size - count + 1);
    req.query = {{"list-type", "2"}, {"max-keys", std::to_string(want)}};
    req.query.emplace_back("prefix", kp + std::string(prefix));
    if (!delimiter.empty()) req.query.emplace_back("delimiter", std::string(delimiter));
    if (!continuation.empty()) {
      req.query.emplace_back("continuation-token", continuation);
    } else if (!token.empty()) {
      // After a common prefix "a/", skip every key inside it: '~' sorts after the key alphabet.
      std::string after = kp + std::string(token);
      if (token.back() == '/') after += '~';
      req.query.emplace_back("start-after", after);
    }
    auto r = http_->Execute(req, "list " + kp + std::string(prefix));
    if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
    if (r->status != 200) return MapError(*r, "list", kp + std::string(prefix), options_);
    pugi::xml_document doc;
    std::string text = r->text();
    if (!doc.load_buffer(text.data(), text.size())) {
      return Status::Internal("s3 list " + std::string(prefix) + ": unreadable XML (request id " +
                              r->request_id + ")");
    }
    pugi::xml_node root = doc.child("ListBucketResult");
    if (!root) {
      return Status::Internal("s3 list " + std::string(prefix) + ": no ListBucketResult");
    }
    // Entries (keys and common prefixes), merged in order, without our key prefix.
    std::vector<std::pair<std::string, ObjectInfo>> entries;  // etag empty + key '/'-ended: prefix
    for (pugi::xml_node c : root.children("Contents")) {
      std::string k = c.child_value("Key");
      if (!k.starts_with(kp)) continue;
      ObjectInfo info;
      info.key = k.substr(kp.size());
      info.size = std::strtoull(c.child_value("Size"), nullptr, 10);
      info.etag = StripQuotes(c.child_value("ETag"));
      info.modified_us = s3::ParseIso8601Micros(c.child_value("LastModified"));
      entries.emplace_back(info.key, std::move(info));
    }
    for (pugi::xml_node c : root.children("CommonPrefixes")) {
      std::string p = c.child_value("Prefix");
      if (!p.starts_with(kp)) continue;
      entries.emplace_back(p.substr(kp.size()), ObjectInfo{});
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    bool full = false;
    for (auto& [name, info] : entries) {
      if (SkippedByToken(name, token)) continue;
      const bool is_prefix = info.key.empty();
      if (is_prefix) {
        if (!ValidateListPrefix(name).ok()) continue;  // not one of ours
        full = !page.AddPrefix(name);
      } else {
        if (!ValidateObjectKey(name).ok()) continue;
        full = !page.AddObject(std::move(info));
      }
      if (full) break;
      ++count;
    }
    const bool truncated = std::string_view(root.child_value("IsTruncated")) == "true";
    continuation = root.child_value("NextContinuationToken");
    if (full || !truncated) break;
    if (continuation.empty()) {
      return Status::Internal("s3 list " + std::string(prefix) +
                              ": truncated without a continuation token (request id " +
                              r->request_id + ")");
    }
  }
  return std::move(page).Finish();
}

// ---- bucket, probe ----

Status S3ObjectStore::CreateBucket() {
  HttpRequest req;
  req.method = "PUT";
  std::string xml;
  if (options_.region != "us-east-1") {
    xml = "<CreateBucketConfiguration><LocationConstraint>" + options_.region +
          "</LocationConstraint></CreateBucketConfiguration>";
    req.body = {AsBytes(xml)};
    req.headers.push_back("Content-Type: application/xml");
  }
  auto r = http_->Execute(req, "create bucket " + options_.bucket);
  if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
  if (r->status == 200) return Status::Ok();
  auto [code, message] = Http::ParseErrorBody(r->text());
  if (code == "BucketAlreadyOwnedByYou") return Status::Ok();
  if (code == "BucketAlreadyExists") {
    return Status::FailedPrecondition("s3 create bucket " + options_.bucket + ": " +
                                      Detail(*r, code, message) + "; the name belongs to another "
                                      "account: choose another WMBT_KV_BUCKET");
  }
  return MapError(*r, "create bucket", "", options_);
}

Status S3ObjectStore::DeleteBucket() {
  HttpRequest req;
  req.method = "DELETE";
  auto r = http_->Execute(req, "delete bucket " + options_.bucket);
  if (!r.ok()) return Status(r.status().code(), Scrub(r.status().message()));
  if (r->status == 204 || r->status == 200) return Status::Ok();
  return MapError(*r, "delete bucket", "", options_);
}

Status S3ObjectStore::Probe(std::string_view probe_prefix, std::string* warning) {
  // 1. The bucket and the credentials.
  HttpRequest head;
  head.method = "HEAD";
  auto hr = http_->Execute(head, "head bucket " + options_.bucket);
  if (!hr.ok()) {
    std::string message = Scrub(hr.status().message());
    if (hr.status().code() == Code::kUnavailable) {
      message += ": is an S3 server running at " + options_.endpoint +
                 " (the endpoint: --s3-endpoint or WMBT_KV_S3_ENDPOINT)?";
    }
    return Status(hr.status().code(), message).WithContext("S3 probe of " + Describe());
  }
  if (hr->status == 404 && options_.create_bucket) {
    WMBT_RETURN_IF_ERROR(CreateBucket());
  } else if (hr->status != 200) {
    return MapError(*hr, "head bucket", "", options_).WithContext("S3 probe of " + Describe());
  }

  // 2. Conditional writes, on a probe key nobody else uses.
  char rnd[17];
  std::snprintf(rnd, sizeof rnd, "%016llx",
                static_cast<unsigned long long>(options_.random->Next64()));
  const std::string key = std::string(probe_prefix) + ".wombatkv-probe-" + rnd;
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  const std::string full = options_.key_prefix + key;
  // Three bodies: a retried write (its first attempt's answer lost) decides whether a 412 is its
  // own doing by the object's MD5 (PutSingle), which one body would make every write's.
  const std::string body = "wombatkv conditional-write probe";
  const std::string body2 = body + ", second write", body3 = body + ", third write";
  std::string why;
  // A write that could not be made (retries exhausted) says nothing about the server's
  // conditional writes: the probe fails, as for the first write, rather than turn them off.
  auto transient = [&](const Status& s, const char* which) -> std::optional<Status> {
    if (s.code() != Code::kUnavailable) return std::nullopt;
    return s.WithContext("S3 probe of " + Describe() + ": the " + which + " write of " + key);
  };
  auto first = PutSingle(full, key, {AsBytes(body)}, {PutMode::kIfAbsent, ""});
  if (!first.ok()) {
    if (first.status().code() != Code::kFailedPrecondition ||
        first.status().message().find("does not implement") == std::string::npos) {
      return first.status().WithContext("S3 probe of " + Describe() + ": writing " + key);
    }
    why = "If-None-Match: * is not implemented (" + first.status().message() + ")";
  } else {
    auto second = PutSingle(full, key, {AsBytes(body2)}, {PutMode::kIfAbsent, ""});
    if (auto s = transient(second.status(), "second")) {
      (void)Delete(key);
      return *s;
    }
    if (second.ok()) {
      why = "a second If-None-Match: * write of the same key succeeded";
    } else if (!second.status().IsConflict()) {
      why = "a second If-None-Match: * write failed with " + second.status().ToString();
    } else {
      auto third = PutSingle(full, key, {AsBytes(body3)},
                             {PutMode::kIfMatch, "0123456789abcdef0123456789abcdef"});
      if (auto s = transient(third.status(), "third")) {
        (void)Delete(key);
        return *s;
      }
      if (third.ok()) why = "an If-Match write with a wrong ETag succeeded";
      else if (!third.status().IsConflict()) {
        why = "an If-Match write with a wrong ETag failed with " + third.status().ToString();
      }
    }
  }
  Status deleted = Delete(key);
  conditional_writes_.store(why.empty());
  if (!why.empty() && warning) {
    *warning = "S3 server at " + options_.endpoint +
               " does not support conditional writes: " + Scrub(why) +
               ". Falling back to last-writer-wins (a HEAD before each conditional PUT): two "
               "writers racing on one chain head may lose an update. See docs/s3.md.";
  }
  if (!deleted.ok()) return deleted.WithContext("S3 probe: deleting " + key);
  return Status::Ok();
}

}  // namespace wombatkv
