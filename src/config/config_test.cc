#include "config/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "base/limits.h"

namespace wombatkv {
namespace {

// Sets environment variables for one test and restores the previous values afterwards.
class ScopedEnv {
 public:
  ScopedEnv() {
    for (const SettingDoc& s : AllSettings()) Save(std::string(s.name));
    for (const char* n : {"HOME", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID",
                          "AWS_SECRET_ACCESS_KEY"})
      Save(n);
    for (const SettingDoc& s : AllSettings()) unsetenv(std::string(s.name).c_str());
    for (const char* n :
         {"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"})
      unsetenv(n);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }
  void Set(const char* name, const char* value) { setenv(name, value, 1); }
  void Unset(const char* name) { unsetenv(name); }

 private:
  void Save(const std::string& name) {
    const char* v = getenv(name.c_str());
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(Config, DefaultsApplyWhenNothingIsSet) {
  ScopedEnv env;
  env.Set("HOME", "/home/alice");
  auto c = Config::FromEnv();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->data_dir, "/home/alice/.wombatkv");
  EXPECT_EQ(c->ns, "default");
  EXPECT_TRUE(c->fingerprint.IsZero());
  EXPECT_EQ(c->l2_prefix, "kv");
  EXPECT_EQ(c->cache_bytes, DefaultCacheBytes(PhysicalMemoryBytes()));
  EXPECT_EQ(c->upload_threads, 16u);
  EXPECT_EQ(c->remote_prefix, "");
  EXPECT_EQ(c->tcp_addr, "");
  EXPECT_EQ(c->http_addr, "");
  EXPECT_TRUE(c->client_poll);
  EXPECT_EQ(c->request_timeout_ms, 300'000u);
  EXPECT_EQ(c->log_level, Config::LogLevel::kWarn);
  EXPECT_EQ(c->s3_bucket, "");
  EXPECT_EQ(c->s3_region, "us-east-1");
}

TEST(Config, DataDirFallsBackToTmpPerUserWithoutHome) {
  ScopedEnv env;
  env.Unset("HOME");
  auto c = Config::FromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data_dir, "/tmp/wombatkv-" + std::to_string(getuid()));
}

TEST(Config, CacheDefaultIsAnEighthOfRamCappedAt8GiB) {
  EXPECT_EQ(DefaultCacheBytes(16ull << 30), 2ull << 30);
  EXPECT_EQ(DefaultCacheBytes(512ull << 30), 8ull << 30);
  EXPECT_EQ(DefaultCacheBytes(0), Config::kCacheBytesFallback);
  EXPECT_GT(PhysicalMemoryBytes(), 0u);
}

TEST(Config, DiskCacheIsAutoAnEighthOfTheFileSystemCappedAt64GiBAndOnlyWithS3) {
  EXPECT_EQ(DefaultDiskCacheBytes(400ull << 30), 50ull << 30);
  EXPECT_EQ(DefaultDiskCacheBytes(4ull << 40), 64ull << 30);
  EXPECT_EQ(DefaultDiskCacheBytes(0), Config::kDiskCacheBytesFallback);
  EXPECT_GT(FileSystemBytes("/"), 0u);
  EXPECT_EQ(FileSystemBytes("/a/path/that/does/not/exist"), FileSystemBytes("/"));
  Config c;
  EXPECT_FALSE(c.disk_cache_bytes.has_value());
  EXPECT_EQ(DiskCacheBudget(c, "/"), 0u) << "no bucket: the local directory needs no cache";
  c.s3_bucket = "b";
  EXPECT_EQ(DiskCacheBudget(c, "/"), DefaultDiskCacheBytes(FileSystemBytes("/")));
  ASSERT_TRUE(c.Set("WMBT_KV_DISK_CACHE_BYTES", "20G").ok());
  EXPECT_EQ(DiskCacheBudget(c, "/"), 20ull << 30);
  EXPECT_NE(c.Describe().find("WMBT_KV_DISK_CACHE_BYTES=21474836480\n"), std::string::npos);
  ASSERT_TRUE(c.Set("WMBT_KV_DISK_CACHE_BYTES", "0").ok());
  EXPECT_EQ(DiskCacheBudget(c, "/"), 0u);
  ASSERT_TRUE(c.Set("WMBT_KV_DISK_CACHE_BYTES", "auto").ok());
  EXPECT_NE(c.Describe().find("WMBT_KV_DISK_CACHE_BYTES=auto\n"), std::string::npos);
  Status bad = c.Set("WMBT_KV_DISK_CACHE_BYTES", "lots");
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_NE(bad.message().find("WMBT_KV_DISK_CACHE_BYTES"), std::string::npos);
}

TEST(Config, L2PackedBytesDefaultsTo1MiBAndIsBoundedByTheJournal) {
  Config c;
  EXPECT_EQ(c.l2_packed_bytes, 1u << 20);
  ASSERT_TRUE(c.Set("WMBT_KV_L2_PACKED_BYTES", "0").ok());
  EXPECT_EQ(c.l2_packed_bytes, 0u);
  ASSERT_TRUE(c.Set("WMBT_KV_L2_PACKED_BYTES", "256K").ok());
  EXPECT_NE(c.Describe().find("WMBT_KV_L2_PACKED_BYTES=262144\n"), std::string::npos);
  for (const char* v : {"2M", "-1", "small"}) {
    Status bad = c.Set("WMBT_KV_L2_PACKED_BYTES", v);
    EXPECT_EQ(bad.code(), Code::kInvalidArgument) << v;
    EXPECT_NE(bad.message().find("WMBT_KV_L2_PACKED_BYTES"), std::string::npos) << v;
  }
  EXPECT_EQ(c.l2_packed_bytes, 256u << 10) << "a bad value changes nothing";
}

TEST(Config, EveryVariableIsRead) {
  ScopedEnv env;
  env.Set("WMBT_KV_DATA_DIR", "/srv/wkv");
  env.Set("WMBT_KV_NAMESPACE", "team-a.prod_1");
  env.Set("WMBT_KV_FINGERPRINT", "00112233445566778899AABB");
  env.Set("WMBT_KV_S3_PREFIX", "org/kv");
  env.Set("WMBT_KV_CACHE_BYTES", "512M");
  env.Set("WMBT_KV_UPLOAD_THREADS", "7");
  env.Set("WMBT_KV_REMOTE_PREFIX", "wkv0");
  env.Set("WMBT_KV_TCP_ADDR", "[::1]:7070");
  env.Set("WMBT_KV_HTTP_ADDR", "http://localhost:8080");
  env.Set("WMBT_KV_CLIENT_POLL", "0");
  env.Set("WMBT_KV_REQUEST_TIMEOUT_MS", "0");
  env.Set("WMBT_KV_SHM_GROUP", "kv-engines");
  env.Set("WMBT_KV_LOG_LEVEL", "DEBUG");
  env.Set("WMBT_KV_S3_ENDPOINT", "http://127.0.0.1:9000");
  env.Set("WMBT_KV_BUCKET", "kv-bucket");
  env.Set("WMBT_KV_S3_REGION", "eu-west-1");
  env.Set("WMBT_KV_S3_ACCESS_KEY", "AKIA");
  env.Set("WMBT_KV_S3_SECRET_KEY", "s3cr3t");
  auto c = Config::FromEnv();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->data_dir, "/srv/wkv");
  EXPECT_EQ(c->ns, "team-a.prod_1");
  EXPECT_EQ(c->fingerprint.ToHex(), "00112233445566778899aabb");
  EXPECT_EQ(c->l2_prefix, "org/kv");
  EXPECT_EQ(c->cache_bytes, 512ull << 20);
  EXPECT_EQ(c->upload_threads, 7u);
  EXPECT_EQ(c->remote_prefix, "wkv0");
  EXPECT_EQ(c->tcp_addr, "[::1]:7070");
  EXPECT_EQ(c->http_addr, "http://localhost:8080");
  EXPECT_FALSE(c->client_poll);
  EXPECT_EQ(c->request_timeout_ms, 0u);  // wait for ever
  EXPECT_EQ(c->shm_group, "kv-engines");
  EXPECT_EQ(c->log_level, Config::LogLevel::kDebug);
  EXPECT_EQ(c->s3_endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(c->s3_bucket, "kv-bucket");
  EXPECT_EQ(c->s3_region, "eu-west-1");
  EXPECT_EQ(c->s3_access_key, "AKIA");
  EXPECT_EQ(c->s3_secret_key, "s3cr3t");
}

TEST(Config, EmptyVariableMeansDefault) {
  ScopedEnv env;
  env.Set("WMBT_KV_NAMESPACE", "");
  env.Set("WMBT_KV_UPLOAD_THREADS", "");
  auto c = Config::FromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ns, "default");
  EXPECT_EQ(c->upload_threads, 16u);
}

TEST(Config, AwsVariablesAreFallbacksOnly) {
  ScopedEnv env;
  env.Set("AWS_ACCESS_KEY_ID", "aws-id");
  env.Set("AWS_SECRET_ACCESS_KEY", "aws-secret");
  env.Set("AWS_REGION", "ap-south-1");
  env.Set("AWS_ENDPOINT_URL", "https://s3.example.com");
  env.Set("WMBT_KV_S3_ACCESS_KEY", "ours");
  auto c = Config::FromEnv();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->s3_access_key, "ours");
  EXPECT_EQ(c->s3_secret_key, "aws-secret");
  EXPECT_EQ(c->s3_region, "ap-south-1");
  EXPECT_EQ(c->s3_endpoint, "https://s3.example.com");
  EXPECT_EQ(c->s3_bucket, "");  // AWS variables alone never select S3
  // Of these, only the one set by its own name says S3 was meant (l2_from_config.h).
  EXPECT_EQ(c->s3_named, std::vector<std::string>{"WMBT_KV_S3_ACCESS_KEY"});
}

// Another tool's AWS_* value that would not parse (no scheme, a space) leaves the setting at its
// default and stops nothing here: a local or remote store never uses it; one that opens S3 is
// refused naming it (S3Options.ABadAwsFallbackStopsOnlyAStoreThatOpensS3).
TEST(Config, ABadAwsFallbackIsKeptAsideNotFatal) {
  ScopedEnv env;
  env.Set("AWS_ENDPOINT_URL", "minio.local:9000");
  env.Set("AWS_REGION", "eu west");
  auto c = Config::FromEnv();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->s3_endpoint, "");
  EXPECT_EQ(c->s3_region, "us-east-1");
  EXPECT_NE(c->bad_aws_fallback.find("AWS_ENDPOINT_URL"), std::string::npos) << c->bad_aws_fallback;
  env.Set("AWS_ENDPOINT_URL", "");
  env.Set("WMBT_KV_S3_REGION", "eu-west-1");  // ours given: the AWS one is not read
  auto d = Config::FromEnv();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bad_aws_fallback, "");
}

TEST(Config, S3SettingsGivenByTheirOwnNamesAreRemembered) {
  Config c;
  ASSERT_TRUE(c.Set("WMBT_KV_S3_ENDPOINT", "http://127.0.0.1:9000").ok());
  ASSERT_TRUE(c.Set("WMBT_KV_S3_RETRIES", "2").ok());  // tuning: means nothing on its own
  ASSERT_TRUE(c.Set("WMBT_KV_S3_CA_FILE", "/etc/ca.pem").ok());
  EXPECT_EQ(c.s3_named, (std::vector<std::string>{"WMBT_KV_S3_ENDPOINT", "WMBT_KV_S3_CA_FILE"}));
  ASSERT_TRUE(c.Set("WMBT_KV_S3_ENDPOINT", "").ok());  // cleared
  EXPECT_EQ(c.s3_named, std::vector<std::string>{"WMBT_KV_S3_CA_FILE"});
  // Defaults spelled out (an env file setting every variable) say nothing.
  Config d;
  ASSERT_TRUE(d.Set("WMBT_KV_S3_CREATE_BUCKET", "0").ok());
  ASSERT_TRUE(d.Set("WMBT_KV_S3_ADDRESSING", "auto").ok());
  EXPECT_TRUE(d.s3_named.empty());
  ASSERT_TRUE(d.Set("WMBT_KV_S3_ADDRESSING", "path").ok());
  EXPECT_EQ(d.s3_named, std::vector<std::string>{"WMBT_KV_S3_ADDRESSING"});
}

TEST(Config, PrefixSegmentsAreLimitedLikeTheStoreLimitsThem) {
  // A file name holds 255 bytes and Store::Open checks the same (found by fuzz_config).
  Config c;
  EXPECT_TRUE(c.Set("WMBT_KV_S3_PREFIX", std::string(255, 'a')).ok());
  Status s = c.Set("WMBT_KV_S3_PREFIX", std::string(256, 'a'));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("255"), std::string::npos);
}

TEST(Config, ParseErrorNamesVariableValueAndExpectedForm) {
  struct Case {
    const char* name;
    const char* value;
    const char* expected_fragment;
  };
  const Case cases[] = {
      {"WMBT_KV_NAMESPACE", "a/b", "[A-Za-z0-9._-]"},
      {"WMBT_KV_NAMESPACE", "..", "[A-Za-z0-9._-]"},
      {"WMBT_KV_FINGERPRINT", "0011", "24 hex digits"},
      {"WMBT_KV_FINGERPRINT", "zz112233445566778899aabb", "24 hex digits"},
      {"WMBT_KV_S3_PREFIX", "kv/../x", "segments"},
      {"WMBT_KV_S3_PREFIX", "/kv", "segments"},
      {"WMBT_KV_CACHE_BYTES", "12x", "512M"},
      {"WMBT_KV_CACHE_BYTES", "0", "positive"},
      {"WMBT_KV_CACHE_BYTES", "99999999999999999999", "byte count"},
      {"WMBT_KV_CACHE_BYTES", "17179869184T", "byte count"},
      {"WMBT_KV_UPLOAD_THREADS", "0", "1 to 64"},
      {"WMBT_KV_UPLOAD_THREADS", "65", "1 to 64"},
      {"WMBT_KV_UPLOAD_THREADS", "-1", "1 to 64"},
      {"WMBT_KV_REMOTE_PREFIX", "a b", "shared-memory prefix"},
      {"WMBT_KV_TCP_ADDR", "localhost", "HOST:PORT"},
      {"WMBT_KV_TCP_ADDR", "localhost:0", "HOST:PORT"},
      {"WMBT_KV_TCP_ADDR", "localhost:70000", "HOST:PORT"},
      {"WMBT_KV_HTTP_ADDR", "ftp://x:1", "HOST:PORT"},
      {"WMBT_KV_CLIENT_POLL", "yes", "0 or 1"},
      {"WMBT_KV_REQUEST_TIMEOUT_MS", "5s", "0 to 86400000"},
      {"WMBT_KV_REQUEST_TIMEOUT_MS", "86400001", "0 to 86400000"},
      {"WMBT_KV_LOG_LEVEL", "loud", "debug, info, warn, error"},
      {"WMBT_KV_S3_ENDPOINT", "minio:9000", "http://"},
      {"WMBT_KV_BUCKET", "Bad_Bucket", "bucket name"},
      {"WMBT_KV_S3_REGION", "a b", "region"},
  };
  for (const Case& k : cases) {
    ScopedEnv env;
    env.Set(k.name, k.value);
    auto c = Config::FromEnv();
    ASSERT_FALSE(c.ok()) << k.name << "=" << k.value;
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
    const std::string& m = c.status().message();
    EXPECT_NE(m.find(k.name), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("\"") + k.value + "\""), std::string::npos) << m;
    EXPECT_NE(m.find(k.expected_fragment), std::string::npos) << m;
  }
}

TEST(Config, ByteSizesAcceptBinarySuffixes) {
  EXPECT_EQ(ParseByteSize("1073741824"), 1073741824u);
  EXPECT_EQ(ParseByteSize("4k"), 4096u);
  EXPECT_EQ(ParseByteSize("4KiB"), 4096u);
  EXPECT_EQ(ParseByteSize("4KB"), 4096u);
  EXPECT_EQ(ParseByteSize("3G"), 3ull << 30);
  EXPECT_EQ(ParseByteSize("2t"), 2ull << 40);
  EXPECT_FALSE(ParseByteSize(""));
  EXPECT_FALSE(ParseByteSize("G"));
  EXPECT_FALSE(ParseByteSize("1 G"));
  EXPECT_FALSE(ParseByteSize("1P"));
  EXPECT_FALSE(ParseByteSize("1GX"));
  EXPECT_FALSE(ParseByteSize("18446744073709551616"));
}

TEST(Config, SetOverridesWithTheSameParsing) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  ASSERT_TRUE(c.Set("WMBT_KV_CACHE_BYTES", "1G").ok());
  EXPECT_EQ(c.cache_bytes, 1ull << 30);
  ASSERT_TRUE(c.Set("WMBT_KV_TCP_ADDR", "127.0.0.1:7070").ok());
  ASSERT_TRUE(c.Set("WMBT_KV_TCP_ADDR", "").ok());  // optional settings can be cleared
  EXPECT_EQ(c.tcp_addr, "");
  Status st = c.Set("WMBT_KV_NAMESPACE", "");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  st = c.Set("WMBT_KV_NO_SUCH", "1");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("WMBT_KV_CACHE_BYTES"), std::string::npos);  // lists known names
}

TEST(Config, LookupIsInjectable) {
  std::map<std::string, std::string> vars = {{"HOME", "/h/"}, {"WMBT_KV_NAMESPACE", "n1"}};
  auto c = Config::FromLookup([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data_dir, "/h/.wombatkv");
  EXPECT_EQ(c->ns, "n1");
}

TEST(Config, GcGraceIsADurationDefaultingToAnHour) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  EXPECT_EQ(c.gc_grace_us, 3600ull * 1000000);
  ASSERT_TRUE(c.Set("WMBT_KV_GC_GRACE", "90s").ok());
  EXPECT_EQ(c.gc_grace_us, 90ull * 1000000);
  ASSERT_TRUE(c.Set("WMBT_KV_GC_GRACE", "0").ok());
  EXPECT_EQ(c.gc_grace_us, 0u);
  EXPECT_EQ(ParseDurationMicros("250ms"), 250000u);
  EXPECT_EQ(ParseDurationMicros("30m"), 1800ull * 1000000);
  EXPECT_EQ(ParseDurationMicros("2d"), 172800ull * 1000000);
  for (const char* bad : {"", "h", "1x", "-1s", "1.5h", "99999999999999999999s"}) {
    EXPECT_FALSE(ParseDurationMicros(bad).has_value()) << bad;
  }
  Status st = c.Set("WMBT_KV_GC_GRACE", "soon");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("WMBT_KV_GC_GRACE"), std::string::npos) << st.message();
}

// Settings lines show a duration in the largest exact unit, in a form the variable takes back.
TEST(Config, DurationsAreDescribedInTheirLargestExactUnit) {
  for (const auto& [us, text] :
       std::vector<std::pair<uint64_t, std::string>>{{0, "0s"},
                                                     {500'000, "500ms"},
                                                     {90'000'000, "90s"},
                                                     {3'600'000'000, "1h"},
                                                     {86'400'000'000, "1d"},
                                                     {1'500'000, "1500ms"},
                                                     {600'000'000, "10m"}}) {
    EXPECT_EQ(DurationText(us), text);
    EXPECT_EQ(ParseDurationMicros(text), us) << text;
  }
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  EXPECT_NE(c.Describe().find("WMBT_KV_GC_GRACE=1h\n"), std::string::npos) << c.Describe();
  EXPECT_NE(c.Describe().find("WMBT_KV_PUBLISH_GRACE=10m\n"), std::string::npos);
  EXPECT_NE(c.Describe().find("WMBT_KV_REFRESH_INTERVAL=0s\n"), std::string::npos);
}

TEST(Config, ListLagIsAutoOrABoundedDuration) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  // auto: the local directory lists what it holds; an S3 bucket gets the default margin.
  EXPECT_FALSE(c.s3_list_lag_us.has_value());
  EXPECT_EQ(ListLagMicros(c), 0u);
  ASSERT_TRUE(c.Set("WMBT_KV_BUCKET", "kv-bucket").ok());
  EXPECT_EQ(ListLagMicros(c), Config::kS3ListLagDefaultUs);
  EXPECT_NE(c.Describe().find("WMBT_KV_S3_LIST_LAG=auto\n"), std::string::npos);
  // An explicit value applies to either L2, 0 included.
  ASSERT_TRUE(c.Set("WMBT_KV_S3_LIST_LAG", "0").ok());
  EXPECT_EQ(ListLagMicros(c), 0u);
  ASSERT_TRUE(c.Set("WMBT_KV_S3_LIST_LAG", "1500ms").ok());
  EXPECT_EQ(ListLagMicros(c), 1500000u);
  EXPECT_NE(c.Describe().find("WMBT_KV_S3_LIST_LAG=1500ms\n"), std::string::npos);
  ASSERT_TRUE(c.Set("WMBT_KV_BUCKET", "").ok());
  EXPECT_EQ(ListLagMicros(c), 1500000u);
  ASSERT_TRUE(c.Set("WMBT_KV_S3_LIST_LAG", "1h").ok());
  ASSERT_TRUE(c.Set("WMBT_KV_S3_LIST_LAG", "auto").ok());
  EXPECT_EQ(ListLagMicros(c), 0u);
  // Bad values name the variable and the accepted forms; the setting keeps its value.
  for (const char* bad : {"soon", "-1s", "10x", "2h", "61m", "1.5s", "auto1"}) {
    Status st = c.Set("WMBT_KV_S3_LIST_LAG", bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("WMBT_KV_S3_LIST_LAG"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("at most 1h"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(c.s3_list_lag_us.has_value());
  EXPECT_EQ(c.Set("WMBT_KV_S3_LIST_LAG", "").code(), Code::kInvalidArgument);
  // From the environment, like every setting.
  auto from_env = Config::FromLookup([](const char* name) -> std::optional<std::string> {
    if (std::string_view(name) == "WMBT_KV_S3_LIST_LAG") return "30s";
    return std::nullopt;
  });
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(ListLagMicros(*from_env), 30ull * 1000000);
  auto bad_env = Config::FromLookup([](const char* name) -> std::optional<std::string> {
    if (std::string_view(name) == "WMBT_KV_S3_LIST_LAG") return "a while";
    return std::nullopt;
  });
  ASSERT_FALSE(bad_env.ok());
  EXPECT_NE(bad_env.status().message().find("WMBT_KV_S3_LIST_LAG"), std::string::npos);
}

TEST(Config, BlockCompressIsOffZstdOrAZstdLevel) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  EXPECT_EQ(c.block_compress_level, 0);
  const std::pair<const char*, int> good[] = {{"zstd", 1}, {"zstd:7", 7}, {"zstd:9", 9},
                                              {"off", 0},  {"on", 1},     {"0", 0},
                                              {"1", 1},    {"true", 1},   {"none", 0}};
  for (const auto& [text, level] : good) {
    ASSERT_TRUE(c.Set("WMBT_KV_BLOCK_COMPRESS", text).ok()) << text;
    EXPECT_EQ(c.block_compress_level, level) << text;
  }
  ASSERT_TRUE(c.Set("WMBT_KV_BLOCK_COMPRESS", "zstd:3").ok());
  EXPECT_NE(c.Describe().find("WMBT_KV_BLOCK_COMPRESS=zstd:3"), std::string::npos);
  for (const char* bad : {"zstd:0", "zstd:10", "zstd:19", "zstd:", "zstd:-1", "lz4", "2", "ZSTD"}) {
    Status st = c.Set("WMBT_KV_BLOCK_COMPRESS", bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("zstd:LEVEL"), std::string::npos) << st.message();
  }
  EXPECT_EQ(c.block_compress_level, 3);  // a refused value changes nothing
}

// Only the form is checked here: whether the group exists is asked where it is used
// (shm::ResolveShmGroup, on the host that uses it).
TEST(Config, ShmGroupIsAGroupNameOrNumber) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  EXPECT_EQ(c.shm_group, "");
  for (const char* good : {"wombatkv", "1500", "kv-engines", "Team_A.1", "0"}) {
    ASSERT_TRUE(c.Set("WMBT_KV_SHM_GROUP", good).ok()) << good;
    EXPECT_EQ(c.shm_group, good);
  }
  EXPECT_NE(c.Describe().find("WMBT_KV_SHM_GROUP=0\n"), std::string::npos);
  for (const char* bad : {"a b", "-x", "grp/../x", "g:1", "abcdefghijklmnopqrstuvwxyz0123456"}) {
    Status st = c.Set("WMBT_KV_SHM_GROUP", bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("WMBT_KV_SHM_GROUP"), std::string::npos) << st.message();
  }
  EXPECT_EQ(c.shm_group, "0");                       // a refused value changes nothing
  ASSERT_TRUE(c.Set("WMBT_KV_SHM_GROUP", "").ok());  // optional: empty clears it
  EXPECT_EQ(c.shm_group, "");
}

TEST(Config, NamespaceBudgetsAndTtlsTakeOneValueOrOnePerNamespace) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  EXPECT_TRUE(c.namespace_bytes_max.empty());
  EXPECT_EQ(c.publish_grace_seconds, 600u);
  ASSERT_TRUE(c.Set("WMBT_KV_NAMESPACE_MAX_BYTES", "10G").ok());
  EXPECT_EQ(c.namespace_bytes_max, (std::map<std::string, uint64_t>{{"", 10ull << 30}}));
  ASSERT_TRUE(c.Set("WMBT_KV_NAMESPACE_MAX_BYTES", "50G,scratch=1G,vip=0").ok());
  EXPECT_EQ(c.namespace_bytes_max, (std::map<std::string, uint64_t>{
                                       {"", 50ull << 30}, {"scratch", 1ull << 30}, {"vip", 0}}));
  ASSERT_TRUE(c.Set("WMBT_KV_NAMESPACE_TTL", "default=7d,scratch=30m").ok());
  EXPECT_EQ(c.namespace_ttl_seconds,
            (std::map<std::string, uint64_t>{{"default", 7 * 86400}, {"scratch", 1800}}));
  ASSERT_TRUE(c.Set("WMBT_KV_PUBLISH_GRACE", "90s").ok());
  EXPECT_EQ(c.publish_grace_seconds, 90u);
  const std::string d = c.Describe();
  EXPECT_NE(d.find("WMBT_KV_NAMESPACE_MAX_BYTES=53687091200,scratch=1073741824,vip=0"),
            std::string::npos) << d;
  EXPECT_NE(d.find("WMBT_KV_NAMESPACE_TTL=default=604800s,scratch=1800s"), std::string::npos) << d;
  for (const char* bad : {"1G,2G", "a=1G,a=2G", "bad/ns=1G", "=1G", "1G,", "x=", "10Q"}) {
    Status st = c.Set("WMBT_KV_NAMESPACE_MAX_BYTES", bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("WMBT_KV_NAMESPACE_MAX_BYTES"), std::string::npos);
  }
  EXPECT_EQ(c.Set("WMBT_KV_NAMESPACE_TTL", "scratch=soon").code(), Code::kInvalidArgument);
  EXPECT_EQ(c.Set("WMBT_KV_PUBLISH_GRACE", "-1").code(), Code::kInvalidArgument);
  // Kept in whole seconds: a finer value is refused, not cut to 0 (which would mean "off").
  Status st = c.Set("WMBT_KV_NAMESPACE_TTL", "scratch=500ms");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("whole seconds"), std::string::npos) << st.message();
  EXPECT_EQ(c.Set("WMBT_KV_PUBLISH_GRACE", "1500ms").code(), Code::kInvalidArgument);
  ASSERT_TRUE(c.Set("WMBT_KV_PUBLISH_GRACE", "2000ms").ok());
  EXPECT_EQ(c.publish_grace_seconds, 2u);
}

// A token must fit an unauthenticated Hello frame (base/limits.h); the error does not echo it.
TEST(Config, AnOverlongAuthTokenIsRefusedWithoutEchoingIt) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  const std::string token = "tok" + std::string(limits::kAuthTokenBytesMax, 'x');
  Status s = c.Set("WMBT_KV_AUTH_TOKEN", token);
  ASSERT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("at most 4096 bytes"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("tokxxx"), std::string::npos) << "the secret was echoed";
  EXPECT_TRUE(c.Set("WMBT_KV_AUTH_TOKEN", token.substr(0, limits::kAuthTokenBytesMax)).ok());
}

TEST(Config, SecretsNeverAppearInDescribe) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  ASSERT_TRUE(c.Set("WMBT_KV_S3_SECRET_KEY", "hunter2-secret").ok());
  std::string d = c.Describe();
  EXPECT_EQ(d.find("hunter2-secret"), std::string::npos);
  EXPECT_NE(d.find("WMBT_KV_S3_SECRET_KEY=(set)"), std::string::npos);
  EXPECT_NE(d.find("WMBT_KV_S3_ACCESS_KEY=(unset)"), std::string::npos);
}

TEST(Config, SettingsTableAndSetterAgree) {
  // Every documented setting is accepted by Set and described; names are unique WMBT_KV_ names.
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  std::string described = c.Describe();
  std::set<std::string_view> names;
  for (const SettingDoc& s : AllSettings()) {
    EXPECT_TRUE(s.name.starts_with("WMBT_KV_")) << s.name;
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
    EXPECT_FALSE(s.default_value.empty()) << s.name;
    EXPECT_FALSE(s.meaning.empty()) << s.name;
    Status st = c.Set(s.name, "");
    EXPECT_EQ(st.message().find("unknown setting"), std::string::npos) << s.name;
    EXPECT_NE(described.find(std::string(s.name) + "="), std::string::npos) << s.name;
  }
  for (const char* required : {"WMBT_KV_DATA_DIR", "WMBT_KV_NAMESPACE", "WMBT_KV_FINGERPRINT",
                               "WMBT_KV_S3_PREFIX", "WMBT_KV_CACHE_BYTES", "WMBT_KV_UPLOAD_THREADS",
                               "WMBT_KV_REMOTE_PREFIX", "WMBT_KV_TCP_ADDR", "WMBT_KV_HTTP_ADDR",
                               "WMBT_KV_LOG_LEVEL"})
    EXPECT_TRUE(names.count(required)) << required;
}

}  // namespace
}  // namespace wombatkv
