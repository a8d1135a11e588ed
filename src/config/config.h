// Config: every user-facing setting of WombatKV in one struct, loaded from WMBT_KV_* environment
// variables (SPEC §9) and overridable by callers and command-line flags through Config::Set, which
// parses exactly as the environment does.
//
// AllSettings() is the single source of the configuration table in docs/configuration.md: every
// setting Set() accepts appears there with its default and meaning (a test checks both ways).
//
// Rules shared by every setting:
//   - An environment variable that is unset or empty means "use the default".
//   - A value that does not parse is InvalidArgument naming the variable, the bad value and the
//     expected form. Secret values (S3 keys) are never echoed in errors or in Describe().
//
// Thread-safety: Config is a value. FromEnv reads the process environment (getenv), which must not
// be modified concurrently (a POSIX rule, not ours).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv {

// One row of the configuration table.
struct SettingDoc {
  std::string_view name;           // environment variable, e.g. "WMBT_KV_CACHE_BYTES"
  std::string_view default_value;  // as a human reads it, e.g. "1/8 of physical RAM, at most 8 GiB"
  std::string_view meaning;
  bool secret = false;  // never echoed
  // Read only by a client of wombatkvd (an engine, the wombatkv CLI): which daemon to use, how to
  // wait for it, the namespace and fingerprint of calls that name none. The daemon neither reads
  // nor takes them.
  bool client = false;
};

// Every setting, in documentation order.
const std::vector<SettingDoc>& AllSettings();

// Reads one environment variable: nullopt when unset. Injected so tests need not touch the real
// environment (they may, with setenv).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

struct Config {
  enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError };

  // Where L1, the local-directory L2 and caches live (WMBT_KV_DATA_DIR).
  std::string data_dir;
  // Namespace used when a caller passes none (WMBT_KV_NAMESPACE).
  std::string ns = "default";
  // Fingerprint used by calls that take none, e.g. the 1.0 C ABI (WMBT_KV_FINGERPRINT).
  Fingerprint fingerprint;
  // Prefix of every L2 object key (WMBT_KV_S3_PREFIX): '/'-separated segments of [A-Za-z0-9._-].
  std::string l2_prefix = "kv";
  // Bytes of payload the RAM cache keeps (WMBT_KV_CACHE_BYTES).
  uint64_t cache_bytes = 0;
  // Bytes of the local disk cache in front of an S3 L2 (WMBT_KV_DISK_CACHE_BYTES; docs/capacity.md):
  // nullopt = "auto" (DefaultDiskCacheBytes of the data directory's file system, decided when the
  // store opens), 0 = no disk cache. Unused with the local-directory L2.
  std::optional<uint64_t> disk_cache_bytes;
  // Objects of the local-directory L2 packed into its journal up to this size
  // (WMBT_KV_L2_PACKED_BYTES), 0..kL2PackedBytesMax.
  uint64_t l2_packed_bytes = 1u << 20;
  static constexpr uint64_t kL2PackedBytesMax = 1u << 20;
  // zstd level blobs are compressed at (WMBT_KV_BLOCK_COMPRESS), 0 = raw
  // (StoreOptions::block_compress_level).
  int block_compress_level = 0;
  // Background L2 upload workers (WMBT_KV_UPLOAD_THREADS), 1..kUploadThreadsMax.
  uint32_t upload_threads = 16;
  // Transport selection for clients (empty = unset): a daemon over shared memory, TCP, HTTP.
  std::string remote_prefix;
  std::string tcp_addr;
  std::string http_addr;
  // Directory of the shared-memory control sockets, "<run_dir>/wombatkv-<prefix>.sock"
  // (WMBT_KV_RUN_DIR): where wombatkvd listens and where clients of WMBT_KV_REMOTE_PREFIX look,
  // so both sides must agree. An absolute path.
  std::string run_dir = "/tmp";
  // WMBT_KV_SHM_GROUP: a group (name or number) that shares memory with a daemon besides its own
  // user and root: wombatkvd lets its members attach (control socket 0660, owned by the group),
  // and a client attaches to a daemon run by a member. Empty = none. Resolved where it is used
  // (an unknown group fails there, naming the setting).
  std::string shm_group;
  // Whether a client of wombatkvd polls for an answer, yielding its core, before it sleeps
  // (WMBT_KV_CLIENT_POLL): a wake-up of an idle core costs tens of µs on a VM, and a call that
  // awaits a disk sync is polled through (docs/daemon.md, "Spinning"). Off: it sleeps at once,
  // and no core is busy while its saves sync.
  bool client_poll = true;
  // How long a client of wombatkvd waits for the answer to a call, over shared memory or TCP
  // (WMBT_KV_REQUEST_TIMEOUT_MS); then the call fails with Unavailable ("may or may not have
  // taken effect") and the next call attaches or connects again. 0 = wait for ever.
  uint32_t request_timeout_ms = 300'000;
  // Sent in the Hello of every connection to a daemon (WMBT_KV_AUTH_TOKEN); secret. Required by
  // a daemon listening on a non-loopback address.
  std::string auth_token;
  LogLevel log_level = LogLevel::kWarn;
  // S3 L2 (empty bucket = the local directory under data_dir).
  std::string s3_endpoint;
  std::string s3_bucket;
  std::string s3_region = "us-east-1";
  std::string s3_access_key;  // secret
  std::string s3_secret_key;  // secret
  // S3 backend tuning, applied by S3OptionsFromConfig (object/s3/l2_from_config.h; docs/s3.md).
  bool s3_create_bucket = false;            // WMBT_KV_S3_CREATE_BUCKET
  std::string s3_addressing = "auto";       // WMBT_KV_S3_ADDRESSING: auto, path or virtual
  uint32_t s3_concurrency = 32;             // WMBT_KV_S3_CONCURRENCY, 1..kS3ConcurrencyMax
  uint32_t s3_connect_timeout_ms = 5000;    // WMBT_KV_S3_CONNECT_TIMEOUT_MS
  uint32_t s3_request_timeout_ms = 120000;  // WMBT_KV_S3_REQUEST_TIMEOUT_MS
  uint32_t s3_retries = 5;                  // WMBT_KV_S3_RETRIES, 0..kS3RetriesMax
  std::string s3_payload_signing = "auto";  // WMBT_KV_S3_PAYLOAD_SIGNING: auto, signed, unsigned
  std::string s3_ca_file;                   // WMBT_KV_S3_CA_FILE (fallback AWS_CA_BUNDLE)
  bool local_dev = false;                   // WMBT_KV_LOCAL_DEV: minioadmin off loopback
  // The settings that only mean something with a bucket (WMBT_KV_S3_ENDPOINT, _ACCESS_KEY,
  // _SECRET_KEY, _CA_FILE, _CREATE_BUCKET, _ADDRESSING) given under those names (a variable, a
  // flag, a C call; not an AWS_* fallback), in the order given. Set without WMBT_KV_BUCKET, they
  // say S3 was meant, and a store refuses to open on the local directory instead
  // (object/s3/l2_from_config.h).
  std::vector<std::string> s3_named;
  // An AWS_* fallback whose value would not parse ("AWS_ENDPOINT_URL=minio:9000", set for another
  // tool): left unapplied, and an error only for a store that opens S3 (l2_from_config.h), never
  // for a local or remote one. Empty = none.
  std::string bad_aws_fallback;
  // Orphan GC deletes a blob no head references only once it is older than this
  // (WMBT_KV_GC_GRACE; docs/layout.md §7).
  uint64_t gc_grace_us = kGcGraceDefaultUs;
  // Capacity (docs/capacity.md). Per-namespace values, key = namespace, "" = every namespace
  // not named, absent or 0 = no limit: the L2 budget in bytes (WMBT_KV_NAMESPACE_MAX_BYTES) and
  // the TTL in seconds (WMBT_KV_NAMESPACE_TTL). Text form: "10G" (every namespace),
  // "default=10G,scratch=500M", or "50G,vip=0".
  std::map<std::string, uint64_t> namespace_bytes_max;
  std::map<std::string, uint64_t> namespace_ttl_seconds;
  // A put not yet published keeps the chain it extends from eviction this long
  // (WMBT_KV_PUBLISH_GRACE).
  uint64_t publish_grace_seconds = 600;
  // A store under a budget or TTL runs orphan GC this often in its background work
  // (WMBT_KV_GC_INTERVAL); 0 = never (then only `wombatkv gc` deletes orphans).
  uint64_t gc_interval_us = 60ull * 1000000;
  // With a shared L2, only the holder of a namespace's eviction lease evicts in it; a holder that
  // stops holds up the others' eviction at most this long (WMBT_KV_EVICTION_LEASE); 0 = no lease.
  uint64_t eviction_lease_us = 30ull * 1000000;
  // The store refreshes from L2 this often (WMBT_KV_REFRESH_INTERVAL), so that chains other hosts
  // publish to the same bucket become visible without a restart or `refresh`; 0 = never.
  uint64_t refresh_interval_us = 0;
  // The longest an L2 listing may lag behind a head write (WMBT_KV_S3_LIST_LAG): orphan GC waits
  // this long before its re-check (gc/orphan_gc.h R3). nullopt = "auto", resolved by ListLagMicros
  // (0 for the local directory, kS3ListLagDefaultUs for S3).
  std::optional<uint64_t> s3_list_lag_us;

  static constexpr uint32_t kUploadThreadsMax = 64;
  static constexpr uint32_t kS3ConcurrencyMax = 1024;
  static constexpr uint32_t kS3RetriesMax = 20;
  static constexpr uint64_t kCacheBytesDefaultMax = 8ull << 30;
  static constexpr uint64_t kCacheBytesFallback = 1ull << 30;  // when RAM size is unknown
  static constexpr uint64_t kDiskCacheBytesDefaultMax = 64ull << 30;
  static constexpr uint64_t kDiskCacheBytesFallback = 1ull << 30;  // file system size unknown
  static constexpr uint64_t kGcGraceDefaultUs = 3600ull * 1000000;  // one hour
  // "auto" with an S3 bucket (docs/configuration.md says why): S3-compatible stores whose listings
  // come from an index updated after the write need it; AWS S3 itself lists consistently.
  static constexpr uint64_t kS3ListLagDefaultUs = 10ull * 1000000;
  static constexpr uint64_t kListLagMaxUs = 3600ull * 1000000;  // GC would sleep this long

  // The defaults, with nothing read from WMBT_KV_* variables. The data directory default needs
  // $HOME (read through `lookup`), else /tmp/wombatkv-<uid>; the cache default needs the RAM size.
  static Config Defaults(const EnvLookup& lookup);
  // Defaults, then every WMBT_KV_* variable that is set and non-empty, then the AWS_* fallbacks
  // for S3 settings still unset (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
  // AWS_ENDPOINT_URL, AWS_CA_BUNDLE). InvalidArgument on the first variable that does not parse.
  static Result<Config> FromLookup(const EnvLookup& lookup);
  // FromLookup over the process environment.
  static Result<Config> FromEnv();
  // `lookup` without the settings named in `given`, nor the AWS_* variables standing in for them
  // (AWS_REGION for WMBT_KV_S3_REGION, ...): for settings given another way (a flag, a C call),
  // which then win even over a variable whose value would not parse.
  static EnvLookup Without(EnvLookup lookup, std::set<std::string> given);

  // Sets the setting named `name` (an AllSettings() name) from text, with the parsing and errors
  // of the environment. An empty value clears an optional setting (transports, S3) and is
  // InvalidArgument for the others. InvalidArgument for an unknown name or a bad value.
  Status Set(std::string_view name, std::string_view value);

  // One "NAME=value" line per setting, secrets shown as "(set)" or "(unset)".
  std::string Describe() const;
};

std::string_view LogLevelName(Config::LogLevel level);

// 1/8 of `physical_bytes`, at most Config::kCacheBytesDefaultMax; kCacheBytesFallback when
// `physical_bytes` is 0 (unknown).
uint64_t DefaultCacheBytes(uint64_t physical_bytes);
// Physical RAM from sysconf(_SC_PHYS_PAGES * _SC_PAGESIZE); 0 if unknown.
uint64_t PhysicalMemoryBytes();
// 1/8 of `file_system_bytes`, at most Config::kDiskCacheBytesDefaultMax;
// kDiskCacheBytesFallback when 0 (unknown). Why (docs/capacity.md): the cache shares its disk
// with L1, logs and whatever else the host keeps there, and open stats every file it holds.
uint64_t DefaultDiskCacheBytes(uint64_t file_system_bytes);
// Size of the file system holding `path` (or its nearest existing parent), from statvfs(3);
// 0 if unknown.
uint64_t FileSystemBytes(const std::string& path);
// The disk cache budget a store in `data_dir` gets from `config`: 0 without an S3 bucket (the
// local-directory L2 needs no cache), else WMBT_KV_DISK_CACHE_BYTES, "auto" resolved.
uint64_t DiskCacheBudget(const Config& config, const std::string& data_dir);

// The listing lag orphan GC must wait out for the L2 `config` selects: WMBT_KV_S3_LIST_LAG, with
// "auto" resolved to 0 for the local directory (it lists what it holds) and
// Config::kS3ListLagDefaultUs for an S3 bucket. An explicit value applies to either L2.
uint64_t ListLagMicros(const Config& config);

// Parses a byte count: digits with an optional binary suffix K, M, G or T (also KiB/KB..., any
// case), e.g. "1073741824", "512M", "8GiB". nullopt on bad form or overflow.
std::optional<uint64_t> ParseByteSize(std::string_view text);

// Parses a duration into microseconds: digits with a unit ms, s, m, h or d (e.g. "90s", "30m",
// "1h", "0s"); bare digits are seconds. nullopt on bad form or overflow.
std::optional<uint64_t> ParseDurationMicros(std::string_view text);
// The inverse, for settings lines: the largest unit that is exact ("1h", "90s", "500ms", "0s").
std::string DurationText(uint64_t us);

}  // namespace wombatkv
