#include "config/config.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <cstdlib>
#include <limits>
#include <utility>

#include "base/limits.h"
#include "base/setting_text.h"

namespace wombatkv {
namespace {

using Setter = Status (*)(Config& c, std::string_view value);

// One row drives both the documentation table and the parser, so they cannot drift apart.
struct Setting {
  SettingDoc doc;
  Setter set;
  bool optional;  // an empty value clears it
};

// The message shape every settings table shares (base/setting_text.h), by the short name the
// rows below use.
Status Bad(std::string_view name, std::string_view value, std::string_view expected,
           bool secret = false) {
  return InvalidSetting(name, value, expected, secret);
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// [A-Za-z0-9._-]{1,max}, not "." or "..": safe to use as a path component.
bool IsSafeName(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || s == "." || s == "..") return false;
  for (char c : s)
    if (!IsNameChar(c)) return false;
  return true;
}

// HOST:PORT, HOST a name/IPv4 or a bracketed IPv6 address, PORT 1..65535.
bool IsHostPort(std::string_view s) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view host = s.substr(0, colon);
  auto port = ParseUint(s.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535) return false;
  if (host.front() == '[') return host.size() > 2 && host.back() == ']';
  for (char c : host)
    if (!IsNameChar(c)) return false;
  return true;
}

// S3 bucket naming rules: 3..63 of [a-z0-9.-], starting and ending with a letter or digit.
bool IsBucketName(std::string_view s) {
  if (s.size() < 3 || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '.' && c != '-') return false;
  return true;
}

Status SetDataDir(Config& c, std::string_view v) {
  if (v.empty()) return Bad("WMBT_KV_DATA_DIR", v, "a directory path");
  c.data_dir = std::string(v);
  return Status::Ok();
}

Status SetNamespace(Config& c, std::string_view v) {
  if (!ValidateNamespace(v).ok())
    return Bad("WMBT_KV_NAMESPACE", v, "a namespace of 1 to 64 characters from [A-Za-z0-9._-]");
  c.ns = std::string(v);
  return Status::Ok();
}

Status SetFingerprint(Config& c, std::string_view v) {
  auto fp = Fingerprint::FromHex(v);
  if (!fp.ok()) return Bad("WMBT_KV_FINGERPRINT", v, "exactly 24 hex digits (a 12-byte digest)");
  c.fingerprint = *fp;
  return Status::Ok();
}

Status SetL2Prefix(Config& c, std::string_view v) {
  bool ok = !v.empty() && v.size() <= 256;
  for (size_t start = 0; ok && start <= v.size();) {
    size_t slash = v.find('/', start);
    size_t end = slash == std::string_view::npos ? v.size() : slash;
    ok = IsSafeName(v.substr(start, end - start), 255);
    start = end + 1;
  }
  if (!ok)
    return Bad("WMBT_KV_S3_PREFIX", v,
               "'/'-separated segments of [A-Za-z0-9._-] (no empty, '.' or '..' segment), "
               "each at most 255 characters, at most 256 in all, e.g. kv or team/kv");
  c.l2_prefix = std::string(v);
  return Status::Ok();
}

Status SetCacheBytes(Config& c, std::string_view v) {
  auto n = ParseByteSize(v);
  if (!n || *n == 0)
    return Bad("WMBT_KV_CACHE_BYTES", v,
               "a positive byte count such as 1073741824, 512M or 8G (K/M/G/T = KiB/MiB/GiB/TiB)");
  c.cache_bytes = *n;
  return Status::Ok();
}

Status SetDiskCacheBytes(Config& c, std::string_view v) {
  if (v == "auto") {
    c.disk_cache_bytes.reset();
    return Status::Ok();
  }
  auto n = ParseByteSize(v);
  if (!n)
    return Bad("WMBT_KV_DISK_CACHE_BYTES", v,
               "auto, 0 (no disk cache) or a byte count such as 20G (K/M/G/T = KiB/MiB/GiB/TiB)");
  c.disk_cache_bytes = *n;
  return Status::Ok();
}

Status SetL2PackedBytes(Config& c, std::string_view v) {
  auto n = ParseByteSize(v);
  if (!n || *n > Config::kL2PackedBytesMax)
    return Bad("WMBT_KV_L2_PACKED_BYTES", v,
               "0 (no packing) or a byte count up to 1M, such as 64K (K/M = KiB/MiB)");
  c.l2_packed_bytes = *n;
  return Status::Ok();
}

Status SetBlockCompress(Config& c, std::string_view v) {
  if (v == "0" || v == "off" || v == "false" || v == "none") {
    c.block_compress_level = 0;
    return Status::Ok();
  }
  if (v == "1" || v == "on" || v == "true" || v == "zstd") {
    c.block_compress_level = limits::kZstdLevelMin;
    return Status::Ok();
  }
  constexpr std::string_view kZstdColon = "zstd:";
  std::optional<uint64_t> level;
  if (v.substr(0, kZstdColon.size()) == kZstdColon) level = ParseUint(v.substr(kZstdColon.size()));
  if (!level || *level < limits::kZstdLevelMin || *level > limits::kZstdLevelMax) {
    return Bad("WMBT_KV_BLOCK_COMPRESS", v,
               "off, zstd (level 1) or zstd:LEVEL with LEVEL from 1 to 9");
  }
  c.block_compress_level = static_cast<int>(*level);
  return Status::Ok();
}

Status SetUploadThreads(Config& c, std::string_view v) {
  auto n = ParseUint(v);
  if (!n || *n == 0 || *n > Config::kUploadThreadsMax)
    return Bad("WMBT_KV_UPLOAD_THREADS", v,
               "an integer from 1 to " + std::to_string(Config::kUploadThreadsMax));
  c.upload_threads = static_cast<uint32_t>(*n);
  return Status::Ok();
}

Status SetRemotePrefix(Config& c, std::string_view v) {
  if (!v.empty() && !IsSafeName(v, 64))
    return Bad("WMBT_KV_REMOTE_PREFIX", v,
               "a shared-memory prefix of 1 to 64 characters from [A-Za-z0-9._-]");
  c.remote_prefix = std::string(v);
  return Status::Ok();
}

Status SetTcpAddr(Config& c, std::string_view v) {
  if (!v.empty() && !IsHostPort(v))
    return Bad("WMBT_KV_TCP_ADDR", v,
               "HOST:PORT with a port of 1-65535, e.g. 127.0.0.1:7070 or [::1]:7070");
  c.tcp_addr = std::string(v);
  return Status::Ok();
}

Status SetRunDir(Config& c, std::string_view v) {
  // The socket path's length (it must fit a sockaddr_un) is checked where the prefix is known.
  if (!v.starts_with('/') || v.find('\0') != std::string_view::npos)
    return Bad("WMBT_KV_RUN_DIR", v, "an absolute directory path, e.g. /run/user/1000");
  c.run_dir = std::string(v);
  return Status::Ok();
}

Status SetShmGroup(Config& c, std::string_view v) {
  // A group name as useradd(8) takes it, or a number; whether it exists is checked where used.
  bool ok = !v.empty() && v.size() <= 32 && v.front() != '-';
  for (char ch : v) {
    ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '_' || ch == '-' || ch == '.');
  }
  if (!v.empty() && !ok)
    return Bad("WMBT_KV_SHM_GROUP", v, "a group name (e.g. wombatkv) or a group id (e.g. 1500)");
  c.shm_group = std::string(v);
  return Status::Ok();
}

Status SetHttpAddr(Config& c, std::string_view v) {
  std::string_view hp = v;
  if (hp.starts_with("http://")) hp.remove_prefix(7);
  if (!v.empty() && !IsHostPort(hp))
    return Bad("WMBT_KV_HTTP_ADDR", v, "HOST:PORT or http://HOST:PORT, e.g. 127.0.0.1:8080");
  c.http_addr = std::string(v);
  return Status::Ok();
}

Status SetAuthToken(Config& c, std::string_view v) {
  if (v.size() > limits::kAuthTokenBytesMax)
    return Bad("WMBT_KV_AUTH_TOKEN", v, "a token of at most 4096 bytes", /*secret=*/true);
  c.auth_token = std::string(v);
  return Status::Ok();
}

Status SetLogLevel(Config& c, std::string_view v) {
  std::string lower;
  for (char ch : v) lower += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (lower == "debug") c.log_level = Config::LogLevel::kDebug;
  else if (lower == "info") c.log_level = Config::LogLevel::kInfo;
  else if (lower == "warn" || lower == "warning") c.log_level = Config::LogLevel::kWarn;
  else if (lower == "error") c.log_level = Config::LogLevel::kError;
  else return Bad("WMBT_KV_LOG_LEVEL", v, "one of debug, info, warn, error");
  return Status::Ok();
}

Status SetS3Endpoint(Config& c, std::string_view v) {
  constexpr std::string_view kForm =
      "an http:// or https:// URL of a host and optional port with no path, e.g. "
      "http://127.0.0.1:9000 (the bucket is WMBT_KV_BUCKET)";
  if (!v.empty() && !(v.starts_with("http://") || v.starts_with("https://")))
    return Bad("WMBT_KV_S3_ENDPOINT", v, kForm);
  // The path is checked where S3 is opened (ParseEndpoint), not here. A bad AWS_ENDPOINT_URL
  // (the fallback) stops only a store that opens S3 (Config::bad_aws_fallback).
  c.s3_endpoint = std::string(v);
  return Status::Ok();
}

Status SetBucket(Config& c, std::string_view v) {
  if (!v.empty() && !IsBucketName(v))
    return Bad("WMBT_KV_BUCKET", v,
               "an S3 bucket name: 3 to 63 characters from [a-z0-9.-], starting and ending with a "
               "letter or digit");
  c.s3_bucket = std::string(v);
  return Status::Ok();
}

Status SetRegion(Config& c, std::string_view v) {
  if (!IsSafeName(v, 64))
    return Bad("WMBT_KV_S3_REGION", v, "a region name of 1 to 64 characters from [A-Za-z0-9._-]");
  c.s3_region = std::string(v);
  return Status::Ok();
}

Status SetAccessKey(Config& c, std::string_view v) {
  c.s3_access_key = std::string(v);
  return Status::Ok();
}

Status SetSecretKey(Config& c, std::string_view v) {
  c.s3_secret_key = std::string(v);
  return Status::Ok();
}

Status SetU32(std::string_view name, uint32_t& out, std::string_view v, uint32_t min,
              uint32_t max) {
  auto n = ParseUint(v);
  if (!n || *n < min || *n > max)
    return Bad(name, v, "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  out = static_cast<uint32_t>(*n);
  return Status::Ok();
}

Status SetClientPoll(Config& c, std::string_view v) {
  return SetSwitch("WMBT_KV_CLIENT_POLL", c.client_poll, v);
}

Status SetRequestTimeout(Config& c, std::string_view v) {
  return SetU32("WMBT_KV_REQUEST_TIMEOUT_MS", c.request_timeout_ms, v, 0, 86'400'000);
}

Status SetS3CreateBucket(Config& c, std::string_view v) {
  return SetSwitch("WMBT_KV_S3_CREATE_BUCKET", c.s3_create_bucket, v);
}

// One of three words; `expected` says which ("a, b or c").
Status SetChoice(std::string_view name, std::string& out, std::string_view v,
                 std::initializer_list<std::string_view> words, std::string_view expected) {
  if (std::find(words.begin(), words.end(), v) == words.end()) return Bad(name, v, expected);
  out = std::string(v);
  return Status::Ok();
}

Status SetS3Addressing(Config& c, std::string_view v) {
  return SetChoice("WMBT_KV_S3_ADDRESSING", c.s3_addressing, v, {"auto", "path", "virtual"},
                   "auto, path or virtual");
}

Status SetS3Concurrency(Config& c, std::string_view v) {
  return SetU32("WMBT_KV_S3_CONCURRENCY", c.s3_concurrency, v, 1, Config::kS3ConcurrencyMax);
}

Status SetS3ConnectTimeout(Config& c, std::string_view v) {
  return SetU32("WMBT_KV_S3_CONNECT_TIMEOUT_MS", c.s3_connect_timeout_ms, v, 1, 600000);
}

Status SetS3RequestTimeout(Config& c, std::string_view v) {
  return SetU32("WMBT_KV_S3_REQUEST_TIMEOUT_MS", c.s3_request_timeout_ms, v, 1, 3600000);
}

Status SetS3Retries(Config& c, std::string_view v) {
  return SetU32("WMBT_KV_S3_RETRIES", c.s3_retries, v, 0, Config::kS3RetriesMax);
}

Status SetS3PayloadSigning(Config& c, std::string_view v) {
  return SetChoice("WMBT_KV_S3_PAYLOAD_SIGNING", c.s3_payload_signing, v,
                   {"auto", "signed", "unsigned"}, "auto, signed or unsigned");
}

Status SetS3CaFile(Config& c, std::string_view v) {
  // Whether the file exists and holds certificates is checked when the S3 store opens.
  if (v.find('\0') != std::string_view::npos) return Bad("WMBT_KV_S3_CA_FILE", v, "a file path");
  c.s3_ca_file = std::string(v);
  return Status::Ok();
}

Status SetLocalDev(Config& c, std::string_view v) {
  return SetSwitch("WMBT_KV_LOCAL_DEV", c.local_dev, v);
}

Status SetGcGrace(Config& c, std::string_view v) {
  auto us = ParseDurationMicros(v);
  if (!us) return Bad("WMBT_KV_GC_GRACE", v, "a duration such as 90s, 30m, 1h or 2d");
  c.gc_grace_us = *us;
  return Status::Ok();
}

// "VALUE" (every namespace) or "NS=VALUE" items, comma separated; at most one bare VALUE, each
// namespace once. Values go through `parse`.
std::optional<std::map<std::string, uint64_t>> ParseNamespaceValues(
    std::string_view text, const std::function<std::optional<uint64_t>(std::string_view)>& parse) {
  std::map<std::string, uint64_t> out;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    const std::string ns(eq == std::string_view::npos ? std::string_view() : item.substr(0, eq));
    if (eq != std::string_view::npos && !ValidateNamespace(ns).ok()) return std::nullopt;
    auto v = parse(eq == std::string_view::npos ? item : item.substr(eq + 1));
    if (!v || !out.emplace(ns, *v).second) return std::nullopt;
    start = comma + 1;
  }
  return out;
}

Status SetNamespaceMaxBytes(Config& c, std::string_view v) {
  auto values = ParseNamespaceValues(v, ParseByteSize);
  if (!values)
    return Bad("WMBT_KV_NAMESPACE_MAX_BYTES", v,
               "a byte count for every namespace (10G), or NS=BYTES items separated by commas, "
               "at most one without NS= (50G,scratch=1G,vip=0); 0 = unlimited");
  c.namespace_bytes_max = std::move(*values);
  return Status::Ok();
}

// A duration these settings keep in whole seconds: "500ms" would silently become 0 (= off).
std::optional<uint64_t> WholeSeconds(std::string_view t) {
  auto us = ParseDurationMicros(t);
  if (!us || *us % 1000000 != 0) return std::nullopt;
  return *us / 1000000;
}

Status SetNamespaceTtl(Config& c, std::string_view v) {
  auto values = ParseNamespaceValues(v, WholeSeconds);
  if (!values)
    return Bad("WMBT_KV_NAMESPACE_TTL", v,
               "a duration for every namespace (24h), or NS=DURATION items separated by commas, "
               "at most one without NS= (7d,scratch=30m,vip=0); whole seconds in units s, m, h, "
               "d; 0 = none");
  c.namespace_ttl_seconds = std::move(*values);
  return Status::Ok();
}

Status SetPublishGrace(Config& c, std::string_view v) {
  auto seconds = WholeSeconds(v);
  if (!seconds) {
    return Bad("WMBT_KV_PUBLISH_GRACE", v, "a duration in whole seconds such as 90s, 10m or 1h");
  }
  c.publish_grace_seconds = *seconds;
  return Status::Ok();
}

Status SetGcInterval(Config& c, std::string_view v) {
  auto us = ParseDurationMicros(v);
  if (!us) return Bad("WMBT_KV_GC_INTERVAL", v, "a duration such as 60s or 10m, or 0 for off");
  c.gc_interval_us = *us;
  return Status::Ok();
}

Status SetEvictionLease(Config& c, std::string_view v) {
  auto us = ParseDurationMicros(v);
  if (!us || (*us > 0 && *us < 1000000)) {
    return Bad("WMBT_KV_EVICTION_LEASE", v, "a duration of at least 1s such as 30s, or 0 for none");
  }
  c.eviction_lease_us = *us;
  return Status::Ok();
}

Status SetRefreshInterval(Config& c, std::string_view v) {
  auto us = ParseDurationMicros(v);
  if (!us) return Bad("WMBT_KV_REFRESH_INTERVAL", v, "a duration such as 10s or 1m, or 0 for off");
  c.refresh_interval_us = *us;
  return Status::Ok();
}

Status SetS3ListLag(Config& c, std::string_view v) {
  if (v == "auto") {
    c.s3_list_lag_us.reset();
    return Status::Ok();
  }
  auto us = ParseDurationMicros(v);
  if (!us || *us > Config::kListLagMaxUs)
    return Bad("WMBT_KV_S3_LIST_LAG", v,
               "auto, or a duration of at most 1h such as 0, 500ms, 10s or 2m (units ms, s, m, "
               "h; bare digits are seconds)");
  c.s3_list_lag_us = *us;
  return Status::Ok();
}

std::string NamespaceValuesText(const std::map<std::string, uint64_t>& values,
                                std::string_view unit) {
  if (values.empty()) return "0";
  std::string out;
  for (const auto& [ns, v] : values) {
    if (!out.empty()) out += ",";
    out += (ns.empty() ? "" : ns + "=") + std::to_string(v) + std::string(unit);
  }
  return out;
}

const std::vector<Setting>& Table() {
  static const std::vector<Setting> kTable = {
      {{"WMBT_KV_DATA_DIR", "~/.wombatkv ($HOME), else /tmp/wombatkv-<uid>",
        "Data directory: L1 metadata (l1/), the local-directory L2 (l2/) and the owner LOCK."},
       SetDataDir, false},
      {{"WMBT_KV_NAMESPACE", "default",
        "Namespace used when a caller passes none; [A-Za-z0-9._-]{1,64}.",
        /*secret=*/false, /*client=*/true},
       SetNamespace, false},
      {{"WMBT_KV_FINGERPRINT", "000000000000000000000000",
        "Model-identity fingerprint (24 hex) for calls that take none, e.g. the 1.0 C ABI.",
        /*secret=*/false, /*client=*/true},
       SetFingerprint, false},
      {{"WMBT_KV_S3_PREFIX", "kv",
        "Prefix of every L2 object key (S3 or the local directory)."},
       SetL2Prefix, false},
      {{"WMBT_KV_CACHE_BYTES", "1/8 of physical RAM, at most 8 GiB",
        "Payload bytes the RAM cache keeps; accepts K/M/G/T suffixes (binary)."},
       SetCacheBytes, false},
      {{"WMBT_KV_DISK_CACHE_BYTES", "auto: 1/8 of the data directory's file system, at most 64 GiB",
        "Bytes of payload files the local disk cache (<data_dir>/cache/) keeps in front of an S3 "
        "L2, least recently used out first; 0 = none. Unused with the local-directory L2."},
       SetDiskCacheBytes, false},
      {{"WMBT_KV_L2_PACKED_BYTES", "1M",
        "Objects of the local-directory L2 up to this size live in its journal files (no file "
        "each: one write, no file creation); 0 = every object its own file. At most 1M. "
        "Unused with an S3 L2."},
       SetL2PackedBytes, false},
      {{"WMBT_KV_BLOCK_COMPRESS", "off",
        "zstd (level 1) or zstd:LEVEL (1 to 9): blocks are stored in L2 compressed when that "
        "saves at least 1/16 of them, else raw. Costs CPU in the upload that a publish awaits; "
        "saves L2 bytes and transfer. Reads decode either form whatever this says; namespace "
        "budgets count blocks uncompressed (docs/layout.md §2)."},
       SetBlockCompress, false},
      {{"WMBT_KV_UPLOAD_THREADS", "16",
        "Background L2 upload workers (1 to 64): enough that the fsyncs of a chain overlap."},
       SetUploadThreads, false},
      {{"WMBT_KV_REMOTE_PREFIX", "(unset)",
        "Use the daemon over shared memory with this prefix (wombatkvd --prefix NAME). Highest "
        "precedence in wmbt_kv_init_from_env.",
        /*secret=*/false, /*client=*/true},
       SetRemotePrefix, true},
      {{"WMBT_KV_TCP_ADDR", "(unset)",
        "Use the daemon over TCP at HOST:PORT. Second precedence in wmbt_kv_init_from_env.",
        /*secret=*/false, /*client=*/true},
       SetTcpAddr, true},
      {{"WMBT_KV_RUN_DIR", "/tmp",
        "Directory of the shared-memory control sockets (wombatkv-<prefix>.sock): where wombatkvd "
        "listens and where WMBT_KV_REMOTE_PREFIX clients look; both sides must agree."},
       SetRunDir, false},
      {{"WMBT_KV_SHM_GROUP", "(unset: own user and root only)",
        "Group (name or number) whose members share memory with wombatkvd besides its own user "
        "and root: the daemon's control socket is 0660 and owned by it, and a client attaches to "
        "a daemon run by a member. Members are trusted as the daemon's own user is (no tokens "
        "over shared memory: every namespace is theirs)."},
       SetShmGroup, true},
      {{"WMBT_KV_CLIENT_POLL", "1",
        "1: a client of wombatkvd polls for its answer (yielding its core) before it sleeps, up to "
        "1 ms for a save or publish; 0: it sleeps at once (no busy core while a save syncs).",
        /*secret=*/false, /*client=*/true},
       SetClientPoll, false},
      {{"WMBT_KV_REQUEST_TIMEOUT_MS", "300000",
        "How long a client of wombatkvd (shared memory or TCP) waits for the answer to a call, in "
        "milliseconds; then the call fails with UNAVAILABLE (it may or may not have taken effect) "
        "and the next call attaches or connects again. 0 = wait for ever. A durable save to S3 "
        "can take seconds.",
        /*secret=*/false, /*client=*/true},
       SetRequestTimeout, false},
      {{"WMBT_KV_HTTP_ADDR", "(unset)",
        "Use the daemon over HTTP at HOST:PORT. Third precedence in wmbt_kv_init_from_env.",
        /*secret=*/false, /*client=*/true},
       SetHttpAddr, true},
      {{"WMBT_KV_AUTH_TOKEN", "(unset)",
        "Auth token a client sends to the daemon (wombatkvd --auth-token); required when the "
        "daemon listens on a non-loopback address. At most 4096 bytes.",
        true},
       SetAuthToken, true},
      {{"WMBT_KV_LOG_LEVEL", "warn", "Least severe log level written: debug, info, warn, error."},
       SetLogLevel, false},
      {{"WMBT_KV_S3_ENDPOINT", "(unset: AWS; fallback AWS_ENDPOINT_URL)",
        "S3-compatible endpoint URL, scheme://host[:port] with no path (MinIO, Ceph RGW, R2, ...)."},
       SetS3Endpoint, true},
      {{"WMBT_KV_BUCKET", "(unset: L2 is the local directory)",
        "S3 bucket holding L2; setting it selects S3 as the source of truth."},
       SetBucket, true},
      {{"WMBT_KV_S3_REGION", "us-east-1 (fallback AWS_REGION)", "S3 region for request signing."},
       SetRegion, false},
      {{"WMBT_KV_S3_ACCESS_KEY", "(unset; fallback AWS_ACCESS_KEY_ID)", "S3 access key id.", true},
       SetAccessKey, true},
      {{"WMBT_KV_S3_SECRET_KEY", "(unset; fallback AWS_SECRET_ACCESS_KEY)", "S3 secret key.", true},
       SetSecretKey, true},
      {{"WMBT_KV_S3_CREATE_BUCKET", "0", "1: the S3 start-up probe creates a missing bucket."},
       SetS3CreateBucket, false},
      {{"WMBT_KV_S3_ADDRESSING", "auto",
        "path, virtual, or auto (virtual-hosted on *.amazonaws.com for dot-free buckets, "
        "path-style elsewhere)."},
       SetS3Addressing, false},
      {{"WMBT_KV_S3_CONCURRENCY", "32", "S3 requests in flight (pooled connections), 1 to 1024."},
       SetS3Concurrency, false},
      {{"WMBT_KV_S3_CONNECT_TIMEOUT_MS", "5000", "S3 TCP/TLS connect timeout, milliseconds."},
       SetS3ConnectTimeout, false},
      {{"WMBT_KV_S3_REQUEST_TIMEOUT_MS", "120000", "Whole S3 request timeout, milliseconds."},
       SetS3RequestTimeout, false},
      {{"WMBT_KV_S3_RETRIES", "5",
        "S3 retries after the first attempt (throttling, 5xx, timeouts, resets), 0 to 20."},
       SetS3Retries, false},
      {{"WMBT_KV_S3_PAYLOAD_SIGNING", "auto",
        "x-amz-content-sha256 of S3 uploads: signed (SHA-256 of every body), unsigned "
        "(UNSIGNED-PAYLOAD), or auto (unsigned over HTTPS and on loopback, signed otherwise)."},
       SetS3PayloadSigning, false},
      {{"WMBT_KV_S3_CA_FILE", "(unset: system CAs; fallback AWS_CA_BUNDLE)",
        "PEM file of the CA certificates that HTTPS S3 endpoints are verified against."},
       SetS3CaFile, true},
      {{"WMBT_KV_LOCAL_DEV", "0",
        "1: accept the well-known minioadmin/minioadmin S3 credentials off loopback."},
       SetLocalDev, false},
      {{"WMBT_KV_GC_GRACE", "1h",
        "Orphan GC deletes a blob no chain head references only once it is older than this: "
        "time for a writer to publish what it put (docs/layout.md §7)."},
       SetGcGrace, false},
      {{"WMBT_KV_NAMESPACE_MAX_BYTES", "0 (unlimited)",
        "L2 bytes each namespace's chains may reference (blobs, heads, sidecars); beyond it the "
        "least recently used chain tails are evicted. 10G for every namespace, or "
        "default=10G,scratch=1G; a bare value applies to namespaces not named (docs/capacity.md)."},
       SetNamespaceMaxBytes, false},
      {{"WMBT_KV_NAMESPACE_TTL", "0 (none)",
        "Chain tails unused for longer than this are evicted: 24h for every namespace, or "
        "scratch=30m,default=7d; units s, m, h, d (docs/capacity.md)."},
       SetNamespaceTtl, false},
      {{"WMBT_KV_PUBLISH_GRACE", "10m",
        "A put not yet published keeps the chain it extends from eviction this long (docs/capacity.md); "
        "older unpublished puts count as abandoned."},
       SetPublishGrace, false},
      {{"WMBT_KV_GC_INTERVAL", "60s",
        "A store with a namespace budget or TTL runs orphan GC this often in its background "
        "work, deleting the blobs eviction stopped referencing once older than "
        "WMBT_KV_GC_GRACE; 0 = off (docs/capacity.md)."},
       SetGcInterval, false},
      {{"WMBT_KV_EVICTION_LEASE", "30s",
        "Hosts sharing an S3 bucket and a namespace budget or TTL evict in a namespace one at a "
        "time, the holder of its eviction lease; a holder that stops keeps the others from "
        "evicting at most this long. 0 = no lease: every host evicts what it sees over "
        "(docs/capacity.md)."},
       SetEvictionLease, false},
      {{"WMBT_KV_REFRESH_INTERVAL", "0 (off)",
        "The store loads what other hosts published to the same L2 this often (G11), so their "
        "chains become visible without a restart or a refresh call; 0 = only at open and on "
        "request (docs/s3.md)."},
       SetRefreshInterval, false},
      {{"WMBT_KV_S3_LIST_LAG", "auto: 0 for the local directory, 10s for S3",
        "The longest an L2 listing may lag behind a chain head write; orphan GC (the store's, "
        "wombatkv gc, wombatkv audit --repair) waits this long before listing the heads again "
        "ahead of its deletes, and again before re-checking them after, so it never misses a "
        "head written before either (docs/layout.md §7). 0 for a store that lists "
        "consistently."},
       SetS3ListLag, false},
  };
  return kTable;
}

const Setting* Find(std::string_view name) {
  for (const Setting& s : Table())
    if (s.doc.name == name) return &s;
  return nullptr;
}

}  // namespace

const std::vector<SettingDoc>& AllSettings() {
  static const std::vector<SettingDoc> kDocs = [] {
    std::vector<SettingDoc> docs;
    for (const Setting& s : Table()) docs.push_back(s.doc);
    return docs;
  }();
  return kDocs;
}

std::string_view LogLevelName(Config::LogLevel level) {
  switch (level) {
    case Config::LogLevel::kDebug: return "debug";
    case Config::LogLevel::kInfo: return "info";
    case Config::LogLevel::kWarn: return "warn";
    case Config::LogLevel::kError: return "error";
  }
  return "warn";
}

uint64_t DefaultCacheBytes(uint64_t physical_bytes) {
  if (physical_bytes == 0) return Config::kCacheBytesFallback;
  uint64_t eighth = physical_bytes / 8;
  return eighth < Config::kCacheBytesDefaultMax ? eighth : Config::kCacheBytesDefaultMax;
}

uint64_t DefaultDiskCacheBytes(uint64_t file_system_bytes) {
  if (file_system_bytes == 0) return Config::kDiskCacheBytesFallback;
  return std::min(file_system_bytes / 8, Config::kDiskCacheBytesDefaultMax);
}

uint64_t FileSystemBytes(const std::string& path) {
  std::string p = path.empty() ? std::string(".") : path;
  // The data directory may not exist yet: its nearest existing parent is on the same file system
  // unless something is mounted in between, which a default need not foresee.
  for (int depth = 0; depth < 64; ++depth) {
    struct statvfs st;
    if (::statvfs(p.c_str(), &st) == 0) return uint64_t{st.f_blocks} * st.f_frsize;
    const size_t slash = p.find_last_of('/');
    if (slash == std::string::npos) p = ".";
    else if (slash == 0) p = "/";
    else p.resize(slash);
  }
  return 0;
}

uint64_t DiskCacheBudget(const Config& config, const std::string& data_dir) {
  if (config.s3_bucket.empty()) return 0;
  return config.disk_cache_bytes.value_or(DefaultDiskCacheBytes(FileSystemBytes(data_dir)));
}

uint64_t ListLagMicros(const Config& config) {
  if (config.s3_list_lag_us) return *config.s3_list_lag_us;
  return config.s3_bucket.empty() ? 0 : Config::kS3ListLagDefaultUs;
}

uint64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  uint64_t p = static_cast<uint64_t>(pages), s = static_cast<uint64_t>(page_size);
  if (p > std::numeric_limits<uint64_t>::max() / s) return std::numeric_limits<uint64_t>::max();
  return p * s;
}

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  auto n = ParseUint(text.substr(0, digits));
  if (!n) return std::nullopt;
  std::string suffix;
  for (char c : text.substr(digits))
    suffix += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  unsigned shift = 0;
  if (!suffix.empty()) {
    static constexpr std::string_view kUnits = "KMGT";
    size_t unit = kUnits.find(suffix[0]);
    std::string_view rest = std::string_view(suffix).substr(1);
    if (unit == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "IB"))
      return std::nullopt;
    shift = 10 * static_cast<unsigned>(unit + 1);
  }
  if (shift > 0 && *n > (std::numeric_limits<uint64_t>::max() >> shift)) return std::nullopt;
  return *n << shift;
}

std::string DurationText(uint64_t us) {
  if (us == 0) return "0s";
  if (us % 1000 != 0) return std::to_string(us / 1000) + "ms";  // below the settings' resolution
  static constexpr std::pair<uint64_t, const char*> kUnits[] = {
      {86400ull * 1000000, "d"}, {3600ull * 1000000, "h"}, {60ull * 1000000, "m"},
      {1000000, "s"},            {1000, "ms"}};
  for (const auto& [scale, unit] : kUnits) {
    if (us % scale == 0) return std::to_string(us / scale) + unit;
  }
  return std::to_string(us / 1000) + "ms";
}

std::optional<uint64_t> ParseDurationMicros(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  auto n = ParseUint(text.substr(0, digits));
  if (!n) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  uint64_t scale;
  if (unit == "ms") scale = 1000;
  else if (unit.empty() || unit == "s") scale = 1000000;
  else if (unit == "m") scale = 60ull * 1000000;
  else if (unit == "h") scale = 3600ull * 1000000;
  else if (unit == "d") scale = 86400ull * 1000000;
  else return std::nullopt;
  if (*n > std::numeric_limits<uint64_t>::max() / scale) return std::nullopt;
  return *n * scale;
}

Config Config::Defaults(const EnvLookup& lookup) {
  Config c;
  auto home = lookup("HOME");
  if (home && !home->empty()) {
    c.data_dir = *home;
    if (c.data_dir.size() > 1 && c.data_dir.back() == '/') c.data_dir.pop_back();
    c.data_dir += "/.wombatkv";
  } else {
    c.data_dir = "/tmp/wombatkv-" + std::to_string(static_cast<unsigned long>(getuid()));
  }
  c.cache_bytes = DefaultCacheBytes(PhysicalMemoryBytes());
  return c;
}

namespace {
// The standard AWS variables fill the S3 settings that no WMBT_KV_* variable set.
constexpr std::pair<const char*, std::string_view> kAwsFallbacks[] = {
    {"AWS_ENDPOINT_URL", "WMBT_KV_S3_ENDPOINT"},
    {"AWS_REGION", "WMBT_KV_S3_REGION"},
    {"AWS_ACCESS_KEY_ID", "WMBT_KV_S3_ACCESS_KEY"},
    {"AWS_SECRET_ACCESS_KEY", "WMBT_KV_S3_SECRET_KEY"},
    {"AWS_CA_BUNDLE", "WMBT_KV_S3_CA_FILE"},
};
}  // namespace

EnvLookup Config::Without(EnvLookup lookup, std::set<std::string> given) {
  return [lookup = std::move(lookup),
          given = std::move(given)](const char* name) -> std::optional<std::string> {
    if (given.count(name) > 0) return std::nullopt;
    for (const auto& [aws, ours] : kAwsFallbacks) {
      if (std::string_view(name) == aws && given.count(std::string(ours)) > 0) return std::nullopt;
    }
    return lookup(name);
  };
}

namespace {

// Keeps Config::s3_named up to date with a setting just set to `value` by its own name.
void NoteS3Named(Config& c, std::string_view name, std::string_view value) {
  static constexpr std::string_view kNeedABucket[] = {
      "WMBT_KV_S3_ENDPOINT", "WMBT_KV_S3_ACCESS_KEY",    "WMBT_KV_S3_SECRET_KEY",
      "WMBT_KV_S3_CA_FILE",  "WMBT_KV_S3_CREATE_BUCKET", "WMBT_KV_S3_ADDRESSING"};
  if (std::find(std::begin(kNeedABucket), std::end(kNeedABucket), name) == std::end(kNeedABucket))
    return;
  std::erase(c.s3_named, name);
  // A default spelled out (an env file that sets every variable) says nothing.
  bool meant = !value.empty();
  if (name == "WMBT_KV_S3_CREATE_BUCKET") meant = c.s3_create_bucket;
  if (name == "WMBT_KV_S3_ADDRESSING") meant = c.s3_addressing != "auto";
  if (meant) c.s3_named.emplace_back(name);
}

}  // namespace

Result<Config> Config::FromLookup(const EnvLookup& lookup) {
  Config c = Defaults(lookup);
  std::vector<std::string_view> applied;
  for (const Setting& s : Table()) {
    std::string name(s.doc.name);
    auto value = lookup(name.c_str());
    if (!value || value->empty()) continue;
    WMBT_RETURN_IF_ERROR(s.set(c, *value));
    NoteS3Named(c, name, *value);
    applied.push_back(s.doc.name);
  }
  for (const auto& [aws, ours] : kAwsFallbacks) {
    if (std::find(applied.begin(), applied.end(), ours) != applied.end()) continue;
    auto value = lookup(aws);
    if (!value || value->empty()) continue;
    Status st = Find(ours)->set(c, *value);
    if (!st.ok() && c.bad_aws_fallback.empty()) {
      c.bad_aws_fallback = st.WithContext(std::string("from fallback ") + aws).message();
    }
  }
  return c;
}

Result<Config> Config::FromEnv() { return FromLookup(ProcessEnv); }

Status Config::Set(std::string_view name, std::string_view value) {
  const Setting* s = Find(name);
  if (s == nullptr) {
    std::string known;
    for (const Setting& t : Table()) known += (known.empty() ? "" : ", ") + std::string(t.doc.name);
    return Status::InvalidArgument("unknown setting \"" + std::string(name.substr(0, 80)) +
                                   "\" (known: " + known + ")");
  }
  if (value.empty() && !s->optional)
    return Bad(s->doc.name, value, "a value (this setting cannot be cleared)");
  WMBT_RETURN_IF_ERROR(s->set(*this, value));
  NoteS3Named(*this, s->doc.name, value);
  return Status::Ok();
}

std::string Config::Describe() const {
  auto secret = [](const std::string& v) { return v.empty() ? "(unset)" : "(set)"; };
  std::string out;
  auto line = [&](std::string_view name, const std::string& value) {
    out += std::string(name) + "=" + value + "\n";
  };
  line("WMBT_KV_DATA_DIR", data_dir);
  line("WMBT_KV_NAMESPACE", ns);
  line("WMBT_KV_FINGERPRINT", fingerprint.ToHex());
  line("WMBT_KV_S3_PREFIX", l2_prefix);
  line("WMBT_KV_CACHE_BYTES", std::to_string(cache_bytes));
  line("WMBT_KV_DISK_CACHE_BYTES",
       disk_cache_bytes ? std::to_string(*disk_cache_bytes) : std::string("auto"));
  line("WMBT_KV_L2_PACKED_BYTES", std::to_string(l2_packed_bytes));
  line("WMBT_KV_BLOCK_COMPRESS", block_compress_level == 0
                                     ? std::string("off")
                                     : "zstd:" + std::to_string(block_compress_level));
  line("WMBT_KV_UPLOAD_THREADS", std::to_string(upload_threads));
  line("WMBT_KV_REMOTE_PREFIX", remote_prefix);
  line("WMBT_KV_TCP_ADDR", tcp_addr);
  line("WMBT_KV_RUN_DIR", run_dir);
  line("WMBT_KV_SHM_GROUP", shm_group);
  line("WMBT_KV_CLIENT_POLL", client_poll ? "1" : "0");
  line("WMBT_KV_REQUEST_TIMEOUT_MS", std::to_string(request_timeout_ms));
  line("WMBT_KV_HTTP_ADDR", http_addr);
  line("WMBT_KV_AUTH_TOKEN", secret(auth_token));
  line("WMBT_KV_LOG_LEVEL", std::string(LogLevelName(log_level)));
  line("WMBT_KV_S3_ENDPOINT", s3_endpoint);
  line("WMBT_KV_BUCKET", s3_bucket);
  line("WMBT_KV_S3_REGION", s3_region);
  line("WMBT_KV_S3_ACCESS_KEY", secret(s3_access_key));
  line("WMBT_KV_S3_SECRET_KEY", secret(s3_secret_key));
  line("WMBT_KV_S3_CREATE_BUCKET", s3_create_bucket ? "1" : "0");
  line("WMBT_KV_S3_ADDRESSING", s3_addressing);
  line("WMBT_KV_S3_CONCURRENCY", std::to_string(s3_concurrency));
  line("WMBT_KV_S3_CONNECT_TIMEOUT_MS", std::to_string(s3_connect_timeout_ms));
  line("WMBT_KV_S3_REQUEST_TIMEOUT_MS", std::to_string(s3_request_timeout_ms));
  line("WMBT_KV_S3_RETRIES", std::to_string(s3_retries));
  line("WMBT_KV_S3_PAYLOAD_SIGNING", s3_payload_signing);
  line("WMBT_KV_S3_CA_FILE", s3_ca_file);
  line("WMBT_KV_LOCAL_DEV", local_dev ? "1" : "0");
  line("WMBT_KV_GC_GRACE", DurationText(gc_grace_us));
  line("WMBT_KV_NAMESPACE_MAX_BYTES", NamespaceValuesText(namespace_bytes_max, ""));
  line("WMBT_KV_NAMESPACE_TTL", NamespaceValuesText(namespace_ttl_seconds, "s"));
  const bool grace_fits = publish_grace_seconds <= UINT64_MAX / 1000000;  // "for ever" may not
  line("WMBT_KV_PUBLISH_GRACE", grace_fits ? DurationText(publish_grace_seconds * 1000000)
                                           : std::to_string(publish_grace_seconds) + "s");
  line("WMBT_KV_GC_INTERVAL", DurationText(gc_interval_us));
  line("WMBT_KV_EVICTION_LEASE", DurationText(eviction_lease_us));
  line("WMBT_KV_REFRESH_INTERVAL", DurationText(refresh_interval_us));
  line("WMBT_KV_S3_LIST_LAG",
       s3_list_lag_us ? DurationText(*s3_list_lag_us) : std::string("auto"));
  return out;
}

}  // namespace wombatkv
