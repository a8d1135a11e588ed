#include "setup/store_from_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "object/s3/l2_from_config.h"

namespace wombatkv {

LogLevel ToStoreLogLevel(Config::LogLevel level) {
  switch (level) {
    case Config::LogLevel::kDebug: return LogLevel::kDebug;
    case Config::LogLevel::kInfo: return LogLevel::kInfo;
    case Config::LogLevel::kWarn: return LogLevel::kWarn;
    case Config::LogLevel::kError: return LogLevel::kError;
  }
  return LogLevel::kWarn;
}

namespace {
// "2026-12-06T07:35:12.123Z ": UTC, to the millisecond.
std::string TimeStamp(uint64_t wall_micros) {
  const time_t seconds = static_cast<time_t>(wall_micros / 1'000'000);
  struct tm utc;
  gmtime_r(&seconds, &utc);
  char text[40];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%03uZ ",
                static_cast<unsigned>(wall_micros / 1000 % 1000));
  return text;
}
}  // namespace

LogSink StderrLogSink(Config::LogLevel threshold, std::string program, Clock* clock) {
  const LogLevel min = ToStoreLogLevel(threshold);
  return [min, program = std::move(program), clock](LogLevel level, const std::string& line) {
    if (level < min) return;
    const std::string stamp = clock ? TimeStamp(clock->WallMicros()) : std::string();
    // One fprintf per line, so lines of concurrent threads do not interleave.
    std::fprintf(stderr, "%s%s [%s] %s\n", stamp.c_str(), program.c_str(), LogLevelTag(level),
                 line.c_str());
  };
}

bool StderrGoesToJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st;
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

Result<std::shared_ptr<Store>> OpenStoreFromConfig(const Config& config, const StoreSetup& setup) {
  LogSink log = setup.log ? setup.log : StderrLogSink(config.log_level, setup.program);
  L2Env l2_env;
  l2_env.warn = [log](const std::string& line) { log(LogLevel::kWarn, line); };
  auto s3 = OpenL2FromConfig(config, l2_env);
  if (!s3.ok()) return s3.status().WithContext("opening the S3 L2");
  std::shared_ptr<ObjectStore> l2(std::move(s3).value());

  StoreOptions options;
  options.data_dir = config.data_dir;
  options.l2_prefix = config.l2_prefix;
  options.cache_bytes_max = config.cache_bytes;
  options.upload_threads = config.upload_threads;
  options.l2_packed_object_bytes_max = config.l2_packed_bytes;
  options.block_compress_level = config.block_compress_level;
  options.namespace_bytes_max = config.namespace_bytes_max;
  options.namespace_ttl_seconds = config.namespace_ttl_seconds;
  options.publish_grace_seconds = config.publish_grace_seconds;
  options.gc_grace_us = config.gc_grace_us;
  options.l2_list_lag_us = ListLagMicros(config);
  options.background_gc = config.gc_interval_us > 0;
  if (config.gc_interval_us > 0) options.gc_interval_ms = config.gc_interval_us / 1000;
  options.eviction_lease_ms = config.eviction_lease_us / 1000;
  if (config.refresh_interval_us > 0) {
    options.refresh_interval_ms = std::max<uint64_t>(1, config.refresh_interval_us / 1000);
  }
  options.object_store = l2.get();  // null: the local directory
  options.payload_allocator = setup.payload_allocator.get();
  options.get_bytes_max = setup.get_bytes_max;
  // The disk cache only fronts a remote L2: in front of the local directory it would be a copy.
  if (l2) options.disk_cache_bytes_max = DiskCacheBudget(config, config.data_dir);
  const LogLevel min = ToStoreLogLevel(config.log_level);
  options.log = [min, log](LogLevel level, const std::string& line) {
    if (level >= min) log(level, line);
  };
  auto store = Store::Open(options);
  if (!store.ok()) return store.status();
  // The deleter also owns the S3 L2 and the payload allocator, which must outlive the store.
  return std::shared_ptr<Store>(std::move(store).value().release(),
                                [l2, alloc = setup.payload_allocator](Store* s) { delete s; });
}

}  // namespace wombatkv
