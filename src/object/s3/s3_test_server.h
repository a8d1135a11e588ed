// Test helpers: the S3 server that scripts/s3-server.sh started (WOMBATKV_TEST_S3_* variables),
// and a store on a fresh bucket that deletes everything it made when destroyed.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "object/s3/s3_object_store.h"

namespace wombatkv::s3test {

struct TestServer {
  bool configured = false;
  std::string server;  // "radosgw", "moto", ...
  std::string endpoint, bucket, region, access_key, secret_key;
  // The same server over HTTPS, and the CA that signs its certificate (radosgw only).
  std::string tls_endpoint, ca_file;
};

inline const TestServer& Server() {
  static const TestServer server = [] {
    auto get = [](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v ? v : "");
    };
    TestServer s;
    s.server = get("WOMBATKV_TEST_S3_SERVER");
    s.endpoint = get("WOMBATKV_TEST_S3_ENDPOINT");
    s.bucket = get("WOMBATKV_TEST_S3_BUCKET");
    s.region = get("WOMBATKV_TEST_S3_REGION");
    s.access_key = get("WOMBATKV_TEST_S3_ACCESS_KEY");
    s.secret_key = get("WOMBATKV_TEST_S3_SECRET_KEY");
    s.tls_endpoint = get("WOMBATKV_TEST_S3_TLS_ENDPOINT");
    s.ca_file = get("WOMBATKV_TEST_S3_CA_FILE");
    if (s.region.empty()) s.region = "us-east-1";
    s.configured = !s.endpoint.empty() && !s.bucket.empty();
    return s;
  }();
  return server;
}

inline constexpr const char* kNoServer =
    "no S3 test server: WOMBATKV_TEST_S3_ENDPOINT/WOMBATKV_TEST_S3_BUCKET are not set. Run "
    "`eval \"$(scripts/s3-server.sh start)\"` first (scripts/test.sh does it for you).";

// A clock that records sleeps instead of sleeping: retries in tests cost no time.
class NoSleepClock final : public Clock {
 public:
  uint64_t NowMicros() override { return RealClock()->NowMicros(); }
  uint64_t WallMicros() override { return RealClock()->WallMicros(); }
  void SleepMicros(uint64_t micros) override {
    slept_micros += micros;
    sleeps++;
  }
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               uint64_t micros) override {
    return RealClock()->WaitFor(cv, lock, micros);
  }
  std::atomic<uint64_t> slept_micros{0};
  std::atomic<uint64_t> sleeps{0};
};

inline NoSleepClock* TestClock() {
  static NoSleepClock clock;
  return &clock;
}

inline S3Options BaseOptions(std::string bucket) {
  const TestServer& s = Server();
  S3Options o;
  o.endpoint = s.endpoint;
  o.bucket = std::move(bucket);
  o.region = s.region;
  o.access_key = s.access_key;
  o.secret_key = s.secret_key;
  o.clock = TestClock();
  o.requests_inflight_max = 16;
  return o;
}

inline std::string FreshBucketName(std::string_view what) {
  static std::atomic<int> seq{0};
  return "wkv-" + std::string(what) + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(seq++);
}

// An S3ObjectStore on a bucket of its own, created now and emptied and deleted on destruction.
class ScratchS3Store final : public ObjectStoreWrapper {
 public:
  explicit ScratchS3Store(S3Options options) {
    auto s = S3ObjectStore::Open(std::move(options));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return;
    inner_ = std::move(s).value();
    set_target(inner_.get());
    Status created = inner_->CreateBucket();
    EXPECT_TRUE(created.ok()) << created.ToString();
  }
  explicit ScratchS3Store(std::string_view what = "conf")
      : ScratchS3Store(BaseOptions(FreshBucketName(what))) {}
  ~ScratchS3Store() override {
    if (!inner_) return;
    inner_->SetFaultHookForTesting(nullptr);
    std::vector<std::string> keys;
    std::string token;
    for (;;) {
      auto page = inner_->List("", "", token, 1000);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (const auto& o : page->objects) keys.push_back(o.key);
      token = page->next_token;
      if (token.empty()) break;
    }
    Status deleted = inner_->DeleteMany(keys);
    EXPECT_TRUE(deleted.ok()) << deleted.ToString();
    Status gone = inner_->DeleteBucket();
    EXPECT_TRUE(gone.ok()) << gone.ToString();
  }
  S3ObjectStore* s3() { return inner_.get(); }
  bool ok() const { return inner_ != nullptr; }

 private:
  std::unique_ptr<S3ObjectStore> inner_;
};

}  // namespace wombatkv::s3test
