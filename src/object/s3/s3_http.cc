// libcurl and OpenSSL stay in this file: everything they report is converted to Status here.
#include "object/s3/s3_http.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <pugixml.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/check.h"
#include "base/hex.h"

namespace wombatkv::s3 {
namespace {

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string DigestHex(const EVP_MD* md, const std::vector<ByteView>& parts) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  WMBT_CHECK(ctx != nullptr);
  WMBT_CHECK(EVP_DigestInit_ex(ctx, md, nullptr) == 1);
  for (ByteView p : parts) {
    if (!p.empty()) WMBT_CHECK(EVP_DigestUpdate(ctx, p.data(), p.size()) == 1);
  }
  WMBT_CHECK(EVP_DigestFinal_ex(ctx, out, &n) == 1);
  EVP_MD_CTX_free(ctx);
  return HexEncode(std::span<const uint8_t>(out, n));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' ||
                        s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool HeaderIs(std::string_view name, std::string_view want) {
  if (name.size() != want.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != want[i]) return false;
  }
  return true;
}

std::string Unquote(std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

// State of one attempt, shared with libcurl's callbacks.
struct Exchange {
  const std::vector<ByteView>* body = nullptr;
  size_t part = 0;
  size_t offset = 0;
  HttpResponse resp;
  uint64_t response_bytes_max = 0;
  uint64_t received = 0;
  std::string spill;  // a body of unknown length
  bool too_big = false;
  bool error_body_cut = false;  // an error's body past kErrorBodyBytesMax was dropped (OnBody)
  long status = 0;  // from the status line, before the body arrives
  // libcurl rewound the body to send it again: a reused connection that died before any answer
  // is retried by libcurl itself, and the first send may have been applied.
  bool rewound = false;
};

// Error documents are small; a larger one is not an S3 error document.
constexpr uint64_t kErrorBodyBytesMax = 1 << 20;

size_t OnHeader(char* data, size_t size, size_t nitems, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * nitems;
  std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {  // a new response (after 100 Continue): start over
    HttpResponse fresh;
    ex->resp = std::move(fresh);
    size_t sp = line.find(' ');
    ex->status = sp == std::string_view::npos ? 0 : std::strtol(line.data() + sp + 1, nullptr, 10);
    return n;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string_view name = line.substr(0, colon);
  std::string_view value = Trim(line.substr(colon + 1));
  if (HeaderIs(name, "etag")) {
    ex->resp.etag = Unquote(value);
  } else if (HeaderIs(name, "x-amz-request-id")) {
    ex->resp.request_id = std::string(value);
  } else if (HeaderIs(name, "content-range")) {
    ex->resp.content_range = std::string(value);
  } else if (HeaderIs(name, "last-modified")) {
    ex->resp.last_modified = std::string(value);
  } else if (HeaderIs(name, "date")) {
    ex->resp.date = std::string(value);
  } else if (HeaderIs(name, "x-amz-bucket-region")) {
    ex->resp.bucket_region = std::string(value);
  } else if (HeaderIs(name, "content-length")) {
    uint64_t v = 0;
    bool ok = !value.empty();
    for (char c : value) {
      if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) {
        ok = false;
        break;
      }
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (ok) {
      ex->resp.content_length = v;
      ex->resp.has_content_length = true;
    }
  }
  return n;
}

size_t OnBody(char* data, size_t size, size_t nitems, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * nitems;
  const bool success = ex->status >= 200 && ex->status < 300;
  const uint64_t limit = success ? ex->response_bytes_max : kErrorBodyBytesMax;
  if (ex->received + n > limit) {
    if (!success) {
      // An error's status says what happened; its body (a proxy's HTML page) only details it:
      // the first kErrorBodyBytesMax bytes are kept, the rest read and dropped, and the answer
      // is handled by its status (a 502 is retried) rather than taken for a broken transfer.
      const size_t keep = static_cast<size_t>(limit - std::min(limit, ex->received));
      if (keep > 0) OnBody(data, 1, keep, user);
      ex->error_body_cut = true;
      return n;
    }
    ex->too_big = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  if (!ex->resp.data && ex->spill.empty() && ex->resp.has_content_length &&
      ex->resp.content_length <= limit) {
    ex->resp.data = Buffer::Allocate(ex->resp.content_length);
  }
  if (ex->resp.data && ex->received + n <= ex->resp.data->size()) {
    std::memcpy(ex->resp.data->data() + ex->received, data, n);
  } else {
    if (ex->resp.data) {  // more than Content-Length announced: keep it all, caller checks
      ex->spill.assign(AsChars(ex->resp.data->view()).substr(0, ex->received));
      ex->resp.data.reset();
    }
    ex->spill.append(data, n);
  }
  ex->received += n;
  return n;
}

size_t OnRead(char* out, size_t size, size_t nitems, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t room = size * nitems;
  size_t written = 0;
  while (written < room && ex->part < ex->body->size()) {
    ByteView p = (*ex->body)[ex->part];
    const size_t take = std::min(room - written, p.size() - ex->offset);
    if (take > 0) std::memcpy(out + written, p.data() + ex->offset, take);
    written += take;
    ex->offset += take;
    if (ex->offset == p.size()) {
      ex->part++;
      ex->offset = 0;
    }
  }
  return written;
}

int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* ex = static_cast<Exchange*>(user);
  if (origin != SEEK_SET || offset != 0) return CURL_SEEKFUNC_CANTSEEK;
  ex->rewound = ex->rewound || ex->part != 0 || ex->offset != 0;
  ex->part = 0;
  ex->offset = 0;
  return CURL_SEEKFUNC_OK;
}

// Transport failures worth retrying; `applied` says whether the server may have acted.
bool RetriableCurlCode(CURLcode code, bool* maybe_applied) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      *maybe_applied = false;
      return true;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SEND_FAIL_REWIND:
      *maybe_applied = true;
      return true;
    default:
      *maybe_applied = false;
      return false;
  }
}

// HTTP answers worth retrying: throttling, server errors, S3's transient RequestTimeout, and its
// 409 for a conditional write that met another operation on the key in flight (AWS: "retry").
bool RetriableHttp(long status, std::string_view code) {
  if (status >= 500) return true;
  if (status == 429) return true;
  if (status == 409 && code == "ConditionalRequestConflict") return true;
  if (status == 400 && code == "RequestTimeout") return true;
  return false;
}

}  // namespace

uint64_t RequestTimeoutMs(const HttpConfig& c, const HttpRequest& r, uint64_t body_bytes) {
  // The bytes the request may move: its body, and what it accepts back when that is bounded.
  uint64_t moved = body_bytes;
  if (r.response_bytes_max != std::numeric_limits<uint64_t>::max()) moved += r.response_bytes_max;
  const uint64_t ms = uint64_t{c.request_timeout_ms} + moved / kTimeoutBytesPerSecond * 1000;
  return std::min<uint64_t>(ms, std::numeric_limits<long>::max());
}

namespace {

struct AttemptOutcome {
  bool transport_error = false;
  bool retriable = false;
  bool maybe_applied = false;
  bool resent = false;  // libcurl sent the body twice (Exchange::rewound)
  std::string error;  // for transport errors
  Code code = Code::kUnavailable;
  HttpResponse resp;
};

}  // namespace

std::string Sha256Hex(const std::vector<ByteView>& parts) { return DigestHex(EVP_sha256(), parts); }
std::string Md5Hex(const std::vector<ByteView>& parts) { return DigestHex(EVP_md5(), parts); }

std::string Md5Base64(const std::vector<ByteView>& parts) {
  std::string hex = Md5Hex(parts);
  uint8_t raw[16];
  WMBT_CHECK(HexDecode(hex, raw));
  unsigned char out[32] = {0};
  const int n = EVP_EncodeBlock(out, raw, sizeof raw);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::pair<std::string, std::string> Http::ParseErrorBody(std::string_view xml) {
  if (xml.empty()) return {};
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) return {};
  pugi::xml_node err = doc.child("Error");
  if (!err) return {};
  return {err.child_value("Code"), err.child_value("Message")};
}

// ---- the handle pool ----

struct Http::Pool {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<CURL*> idle;
  size_t created = 0;
  size_t max = 1;

  ~Pool() {
    for (CURL* h : idle) curl_easy_cleanup(h);
  }
  // Blocks while `max` handles are in use. Null if libcurl cannot make a handle.
  CURL* Acquire() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !idle.empty() || created < max; });
    if (!idle.empty()) {
      CURL* h = idle.back();
      idle.pop_back();
      return h;
    }
    CURL* h = curl_easy_init();
    if (h) created++;
    return h;
  }
  void Release(CURL* h) {
    {
      std::lock_guard<std::mutex> g(mu);
      idle.push_back(h);
    }
    cv.notify_one();
  }
};

Http::Http(HttpConfig config) : config_(std::move(config)), pool_(std::make_unique<Pool>()) {
  WMBT_CHECK(config_.clock != nullptr && config_.random != nullptr);
  GlobalInitOnce();
  pool_->max = std::max<size_t>(1, config_.requests_inflight_max);
}

Http::~Http() = default;

namespace {

std::string BuildUrl(const HttpConfig& c, const HttpRequest& r) {
  std::string url = c.scheme + "://";
  if (c.virtual_hosted) {
    url += c.bucket + "." + c.host + "/" + UriEncode(r.key, true);
  } else {
    url += c.host + "/" + c.bucket;
    if (!r.key.empty()) url += "/" + UriEncode(r.key, true);
  }
  if (!r.query.empty()) {
    // SigV4 canonical query: sorted by encoded name then value, every pair "name=value".
    std::vector<std::pair<std::string, std::string>> q;
    for (const auto& [k, v] : r.query) q.emplace_back(UriEncode(k, false), UriEncode(v, false));
    std::sort(q.begin(), q.end());
    char sep = '?';
    for (const auto& [k, v] : q) {
      url += sep;
      url += k + "=" + v;
      sep = '&';
    }
  }
  return url;
}

AttemptOutcome Attempt(const HttpConfig& c, CURL* h, const HttpRequest& r, std::string_view sha,
                       const HttpFault& fault) {
  AttemptOutcome out;
  if (fault.kind == HttpFault::Kind::kConnectionReset) {
    out.transport_error = out.retriable = true;
    out.error = "injected fault: connection reset";
    return out;
  }
  if (fault.kind == HttpFault::Kind::kStatus) {
    out.resp.status = fault.status;
    std::string xml = "<?xml version=\"1.0\"?><Error><Code>" + fault.code +
                      "</Code><Message>injected fault</Message></Error>";
    out.resp.data = Buffer::CopyOf(AsBytes(xml));
    out.resp.request_id = "injected";
    return out;
  }

  Exchange ex;
  ex.body = &r.body;
  ex.response_bytes_max = r.response_bytes_max;
  uint64_t body_bytes = 0;
  for (ByteView p : r.body) body_bytes += p.size();

  curl_slist* headers = nullptr;
  const std::string sha_header = "x-amz-content-sha256: " + std::string(sha);
  headers = curl_slist_append(headers, sha_header.c_str());
  for (const std::string& hdr : r.headers) headers = curl_slist_append(headers, hdr.c_str());

  char errbuf[CURL_ERROR_SIZE] = {0};
  const std::string url = BuildUrl(c, r);
  const std::string sigv4 = "aws:amz:" + c.region + ":s3";
  curl_easy_reset(h);  // keeps the connection cache: the point of the pool
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(c.connect_timeout_ms));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(RequestTimeoutMs(c, r, body_bytes)));
  // A server that moves no byte either way for this long has stalled (stopped, wedged): the
  // attempt ends then, not after the whole-request timeout sized for the largest objects.
  if (!r.slow_answer) {
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                     static_cast<long>(std::max<uint32_t>(
                         std::min(c.request_timeout_ms, c.stalled_ms) / 1000, 1)));
  }
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  if (!c.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, c.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
  if (!c.access_key.empty()) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, c.access_key.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, c.secret_key.c_str());
  }
  const std::string_view m = r.method;
  if (m == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (m == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (m == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body_bytes));
    curl_easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
    curl_easy_setopt(h, CURLOPT_READDATA, &ex);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, OnSeek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &ex);
  } else if (m == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body_bytes));
    curl_easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
    curl_easy_setopt(h, CURLOPT_READDATA, &ex);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, OnSeek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &ex);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, std::string(m).c_str());
  }

  const CURLcode rc = curl_easy_perform(h);
  out.resent = ex.rewound;
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);

  if (rc == CURLE_WRITE_ERROR && ex.too_big) {
    out.transport_error = true;
    out.code = Code::kCorruption;
    out.error = "the server sent more than the " + std::to_string(r.response_bytes_max) +
                " bytes asked for";
    return out;
  }
  if (rc != CURLE_OK) {
    out.transport_error = true;
    out.retriable = RetriableCurlCode(rc, &out.maybe_applied);
    out.error = std::string(curl_easy_strerror(rc)) + (errbuf[0] ? std::string(": ") + errbuf : "");
    out.code = out.retriable ? Code::kUnavailable : Code::kInternal;
    // TLS trust problems will not go away by retrying: say what to change.
    if (rc == CURLE_PEER_FAILED_VERIFICATION) {
      out.code = Code::kFailedPrecondition;
      out.error = "the TLS certificate of " + c.host + " is not trusted (" + out.error +
                  "): if the endpoint uses a private CA, set WMBT_KV_S3_CA_FILE (or "
                  "AWS_CA_BUNDLE) to the PEM file of that CA, or add it to the system CA store; "
                  "check also that WMBT_KV_S3_ENDPOINT names the host the certificate is for";
    } else if (rc == CURLE_COULDNT_RESOLVE_HOST) {
      out.error += " (is the host name in WMBT_KV_S3_ENDPOINT right?)";
    } else if (rc == CURLE_GOT_NOTHING && c.scheme == "http") {
      out.error += " (a TLS port? then WMBT_KV_S3_ENDPOINT needs https://)";
    } else if (rc == CURLE_SSL_CONNECT_ERROR && c.scheme == "https" &&
               out.error.find("wrong version number") != std::string::npos) {
      out.error += " (the port speaks plain HTTP: WMBT_KV_S3_ENDPOINT needs http://)";
    } else if (rc == CURLE_SSL_CACERT_BADFILE) {
      out.code = Code::kFailedPrecondition;
      const std::string file = c.ca_file.empty() ? std::string("(system default)") : c.ca_file;
      out.error = "the CA file " + file + " holds no usable certificate (" + out.error +
                  "): point WMBT_KV_S3_CA_FILE (or AWS_CA_BUNDLE) at a PEM file of CA certificates";
    }
    return out;
  }
  out.resp = std::move(ex.resp);
  out.resp.status = status;
  if (!ex.spill.empty()) out.resp.data = Buffer::CopyOf(AsBytes(ex.spill));
  if (!out.resp.data) out.resp.data = Buffer::Allocate(0);
  // A body shorter than announced (libcurl normally reports CURLE_PARTIAL_FILE).
  if (m != "HEAD" && out.resp.has_content_length && !ex.error_body_cut &&
      ex.received != out.resp.content_length) {
    out.transport_error = out.retriable = out.maybe_applied = true;
    out.error = "short body: " + std::to_string(ex.received) + " of " +
                std::to_string(out.resp.content_length) + " bytes";
    return out;
  }
  if (fault.kind == HttpFault::Kind::kResetAfterApply) {
    out.transport_error = out.retriable = out.maybe_applied = true;
    out.error = "injected fault: connection reset after the request was applied";
    return out;
  }
  if (fault.kind == HttpFault::Kind::kTruncatedBody && out.resp.data->size() > 0) {
    out.transport_error = out.retriable = out.maybe_applied = true;
    out.error = "injected fault: body truncated";
    return out;
  }
  return out;
}

}  // namespace

Result<HttpResponse> Http::Execute(const HttpRequest& request, std::string_view what) {
  Result<HttpResponse> r = ExecuteOnce(request, what);
  RecordReachability(r);
  return r;
}

void Http::RecordReachability(const Result<HttpResponse>& r) {
  std::string failure;
  if (!r.ok()) {
    failure = r.status().message();
  } else if (r->status >= 500 || r->status == 401 || r->status == 403) {
    failure = "HTTP " + std::to_string(r->status);
  } else if (r->status == 404 && ParseErrorBody(r->text()).first == "NoSuchBucket") {
    failure = "HTTP 404 NoSuchBucket";
  }
  std::lock_guard<std::mutex> g(reach_mu_);
  if (failure.empty()) {
    failing_since_us_ = 0;
    return;
  }
  if (failing_since_us_ == 0)
    failing_since_us_ = std::max<uint64_t>(1, config_.clock->WallMicros());
  last_failure_ = std::move(failure);
}

Status Http::Reachability() const {
  std::lock_guard<std::mutex> g(reach_mu_);
  if (failing_since_us_ == 0) return Status::Ok();
  const uint64_t now = config_.clock->WallMicros();
  const uint64_t seconds = now > failing_since_us_ ? (now - failing_since_us_) / 1'000'000 : 0;
  return Status::Unavailable("every request has failed for " + std::to_string(seconds) +
                             " s; the last: " + last_failure_);
}

Result<HttpResponse> Http::ExecuteOnce(const HttpRequest& request, std::string_view what) {
  // SHA-256 of the empty string: every GET, HEAD and DELETE, without hashing anything.
  static constexpr std::string_view kEmptySha =
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  bool empty = true;
  for (ByteView p : request.body) empty = empty && p.empty();
  const std::string sha = empty                      ? std::string(kEmptySha)
                          : config_.unsigned_payload ? std::string("UNSIGNED-PAYLOAD")
                                                     : Sha256Hex(request.body);
  std::string last_error;
  bool ambiguous = false;
  const uint32_t attempts_max = config_.retries_max + 1;
  uint32_t attempt = 0;
  for (; attempt < attempts_max; ++attempt) {
    if (attempt > 0) {
      // Exponential backoff with full jitter: uniform in [0, min(max, base * 2^(attempt-1))].
      uint64_t cap_ms = config_.backoff_base_ms;
      for (uint32_t i = 1; i < attempt && cap_ms < config_.backoff_max_ms; ++i) cap_ms *= 2;
      cap_ms = std::min<uint64_t>(cap_ms, config_.backoff_max_ms);
      config_.clock->SleepMicros(config_.random->Uniform(cap_ms * 1000 + 1));
    }
    attempts_.fetch_add(1, std::memory_order_relaxed);
    if (attempt > 0) retries_.fetch_add(1, std::memory_order_relaxed);
    HttpFault fault;
    if (fault_hook_) fault = fault_hook_(request, attempt);
    CURL* h = pool_->Acquire();
    if (h == nullptr) return Status::Internal("s3 " + std::string(what) + ": curl_easy_init failed");
    AttemptOutcome out = Attempt(config_, h, request, sha, fault);
    pool_->Release(h);
    ambiguous |= out.resent;
    if (out.transport_error) {
      if (!out.retriable) {
        return Status(out.code, "s3 " + std::string(what) + ": " + out.error);
      }
      ambiguous |= out.maybe_applied;
      last_error = out.error;
      continue;
    }
    std::string code;
    if (out.resp.status >= 400) code = ParseErrorBody(AsChars(out.resp.data->view())).first;
    if (RetriableHttp(out.resp.status, code)) {
      // 503 (SlowDown) and 429 are refusals; other 5xx may have been applied.
      ambiguous |= out.resp.status >= 500 && out.resp.status != 503;
      if (out.resp.status == 503 || out.resp.status == 429) {
        throttled_.fetch_add(1, std::memory_order_relaxed);
      }
      last_error = "HTTP " + std::to_string(out.resp.status) + (code.empty() ? "" : " " + code) +
                   " (request id " + (out.resp.request_id.empty() ? "-" : out.resp.request_id) +
                   ")";
      continue;
    }
    out.resp.attempts = attempt + 1;
    out.resp.ambiguous = ambiguous;
    return std::move(out.resp);
  }
  return Status::Unavailable("s3 " + std::string(what) + ": " + last_error +
                             ", still failing after " + std::to_string(attempt) +
                             (attempt == 1 ? " attempt" : " attempts"));
}

namespace {

// Days from 1970-01-01 to a proleptic Gregorian date (the well-known era arithmetic): no timegm,
// which depends on the process's time zone tables.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Reads exactly `n` digits at `at`; -1 if they are not there.
int64_t Digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return -1;
  int64_t v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

uint64_t ToMicros(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t sec,
                  uint64_t micros) {
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      sec < 0 || sec > 60) {
    return 0;
  }
  const int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return static_cast<uint64_t>(((days * 24 + h) * 60 + mi) * 60 + sec) * 1000000 + micros;
}

}  // namespace

uint64_t ParseIso8601Micros(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fff...]Z
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' ||
      t[16] != ':' || t.back() != 'Z') {
    return 0;
  }
  uint64_t micros = 0;
  if (t.size() > 20) {
    if (t[19] != '.') return 0;
    std::string_view frac = t.substr(20, t.size() - 21);
    if (frac.empty() || frac.size() > 9) return 0;
    for (size_t i = 0; i < 6; ++i) {
      int64_t digit = i < frac.size() ? Digits(frac, i, 1) : 0;
      if (digit < 0) return 0;
      micros = micros * 10 + static_cast<uint64_t>(digit);
    }
    for (size_t i = 6; i < frac.size(); ++i) {
      if (Digits(frac, i, 1) < 0) return 0;
    }
  }
  return ToMicros(Digits(t, 0, 4), Digits(t, 5, 2), Digits(t, 8, 2), Digits(t, 11, 2),
                  Digits(t, 14, 2), Digits(t, 17, 2), micros);
}

uint64_t ParseHttpDateMicros(std::string_view t) {
  // "Mon, 06 May 2024 07:08:09 GMT"
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (t.size() != 29 || t[3] != ',' || t[4] != ' ' || t[7] != ' ' || t[11] != ' ' ||
      t[16] != ' ' || t[19] != ':' || t[22] != ':' || t.substr(25) != " GMT") {
    return 0;
  }
  const size_t month = kMonths.find(t.substr(8, 3));
  if (month == std::string_view::npos || month % 3 != 0) return 0;
  return ToMicros(Digits(t, 12, 4), static_cast<int64_t>(month / 3 + 1), Digits(t, 5, 2),
                  Digits(t, 17, 2), Digits(t, 20, 2), Digits(t, 23, 2), 0);
}

}  // namespace wombatkv::s3
