// S3ObjectStore against a real S3 server (scripts/s3-server.sh): the ObjectStore conformance
// suite, then what only S3 has — credentials, paging at S3's 1000, multipart, retries.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "object/object_store_conformance.h"
#include "object/s3/l2_from_config.h"
#include "object/s3/s3_http.h"
#include "object/s3/s3_test_server.h"

namespace wombatkv {
namespace {

using s3::HttpFault;
using s3::HttpRequest;
using s3test::BaseOptions;
using s3test::FreshBucketName;
using s3test::ScratchS3Store;
using s3test::Server;

INSTANTIATE_TEST_SUITE_P(S3, ObjectStoreConformanceTest,
                         ::testing::Values(ObjectStoreFactory{
                             "S3",
                             []() -> std::unique_ptr<ObjectStore> {
                               if (!Server().configured) {
                                 ADD_FAILURE() << s3test::kNoServer;
                                 return nullptr;
                               }
                               return std::make_unique<ScratchS3Store>();
                             }}),
                         ObjectStoreFactoryName);

std::string Pattern(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

class S3Test : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(Server().configured) << s3test::kNoServer; }
  std::unique_ptr<ScratchS3Store> Scratch(S3Options o) {
    auto s = std::make_unique<ScratchS3Store>(std::move(o));
    EXPECT_TRUE(s->ok());
    return s;
  }
  std::unique_ptr<ScratchS3Store> Scratch() { return Scratch(BaseOptions(FreshBucketName("s3"))); }
};

// ---- times S3 sends (no server needed) ----

TEST(S3Times, ListAndHeadDatesParseToEpochMicros) {
  // 2024-05-06T07:08:09Z = 1714979289 s (date -u -d ... +%s).
  EXPECT_EQ(s3::ParseIso8601Micros("2024-05-06T07:08:09.123Z"), 1714979289123000u);
  EXPECT_EQ(s3::ParseIso8601Micros("2024-05-06T07:08:09Z"), 1714979289000000u);
  EXPECT_EQ(s3::ParseIso8601Micros("1970-01-01T00:00:00.000Z"), 0u);
  EXPECT_EQ(s3::ParseHttpDateMicros("Mon, 06 May 2024 07:08:09 GMT"), 1714979289000000u);
  EXPECT_EQ(s3::ParseHttpDateMicros("Thu, 29 Feb 2024 23:59:59 GMT"), 1709251199000000u);
  for (const char* bad : {"", "2024-05-06 07:08:09Z", "2024-13-06T07:08:09Z", "2024-05-06T07:08:09",
                          "2024-05-06T07:08:09.Z", "2024-05-06T07:08:xxZ"}) {
    EXPECT_EQ(s3::ParseIso8601Micros(bad), 0u) << bad;
  }
  for (const char* bad : {"", "Mon, 06 Foo 2024 07:08:09 GMT", "Mon, 06 May 2024 07:08:09 UTC",
                          "Monday, 06-May-24 07:08:09 GMT"}) {
    EXPECT_EQ(s3::ParseHttpDateMicros(bad), 0u) << bad;
  }
}

// ---- start-up: options, credentials, probe ----

TEST(S3Options, LoopbackEndpointsAreRecognised) {
  EXPECT_TRUE(IsLoopbackEndpoint("http://127.0.0.1:9000"));
  EXPECT_TRUE(IsLoopbackEndpoint("http://localhost"));
  EXPECT_TRUE(IsLoopbackEndpoint("https://[::1]:443/"));
  EXPECT_TRUE(IsLoopbackEndpoint("http://127.1.2.3:80"));
  EXPECT_FALSE(IsLoopbackEndpoint("http://10.0.0.1:9000"));
  EXPECT_FALSE(IsLoopbackEndpoint("http://127.0.0.1.evil.com"));
  EXPECT_FALSE(IsLoopbackEndpoint("https://s3.us-east-1.amazonaws.com"));
  EXPECT_FALSE(IsLoopbackEndpoint("localhost:9000"));
}

TEST(S3Options, DevelopmentCredentialsAreRefusedOffLoopbackUnlessLocalDev) {
  S3Options o;
  o.bucket = "bucket";
  o.access_key = o.secret_key = "minioadmin";
  o.endpoint = "http://10.1.2.3:9000";
  auto refused = S3ObjectStore::Open(o);
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("WMBT_KV_LOCAL_DEV"), std::string::npos);
  o.allow_dev_credentials = true;
  EXPECT_TRUE(S3ObjectStore::Open(o).ok());
  o.allow_dev_credentials = false;
  o.endpoint = "http://127.0.0.1:9000";
  EXPECT_TRUE(S3ObjectStore::Open(o).ok());
  o.endpoint = "";  // AWS
  EXPECT_EQ(S3ObjectStore::Open(o).status().code(), Code::kFailedPrecondition);
}

TEST(S3Options, MalformedOptionsAreInvalidArgument) {
  S3Options o;
  o.bucket = "Bad_Bucket";
  EXPECT_EQ(S3ObjectStore::Open(o).status().code(), Code::kInvalidArgument);
  o.bucket = "good-bucket";
  o.endpoint = "ftp://x";
  EXPECT_EQ(S3ObjectStore::Open(o).status().code(), Code::kInvalidArgument);
  o.endpoint = "http://host:1/path";
  EXPECT_EQ(S3ObjectStore::Open(o).status().code(), Code::kInvalidArgument);
  o.endpoint = "http://host:1";
  o.key_prefix = "no-slash";
  EXPECT_EQ(S3ObjectStore::Open(o).status().code(), Code::kInvalidArgument);
  o.key_prefix = "a/../";
  EXPECT_EQ(S3ObjectStore::Open(o).status().code(), Code::kInvalidArgument);
  o.key_prefix = "a/b/";
  EXPECT_TRUE(S3ObjectStore::Open(o).ok());
}

// The whole-request timeout grows with the bytes a request moves: a large transfer that keeps
// moving on a slow link is not cut where a HEAD would be (stalls are caught separately).
TEST(S3Http, TheRequestTimeoutGrowsWithTheBytesMoved) {
  s3::HttpConfig c;
  c.request_timeout_ms = 120000;
  s3::HttpRequest head;
  EXPECT_EQ(s3::RequestTimeoutMs(c, head, 0), 120000u);
  EXPECT_EQ(s3::RequestTimeoutMs(c, head, 1ull << 30), 120000u + 1024 * 1000);  // a 1 GiB PUT
  s3::HttpRequest ranged;
  ranged.response_bytes_max = 64 << 20;
  EXPECT_EQ(s3::RequestTimeoutMs(c, ranged, 0), 120000u + 64 * 1000);
}

TEST(S3Options, ConfigSelectsTheL2) {
  Config c;
  auto none = OpenL2FromConfig(c);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->get(), nullptr);  // no bucket: the local directory
  {
    // S3 meant, the bucket forgotten (or set as WMBT_KV_S3_BUCKET, which is no setting): an
    // error, not blocks quietly kept on local disk.
    Config meant;
    ASSERT_TRUE(meant.Set("WMBT_KV_S3_ENDPOINT", "http://127.0.0.1:1").ok());
    auto refused = OpenL2FromConfig(meant);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
    EXPECT_NE(
        refused.status().message().find("WMBT_KV_S3_ENDPOINT is set but WMBT_KV_BUCKET is not"),
        std::string::npos)
        << refused.status().ToString();
  }
  {
    Config aws;  // Config::FromEnv with AWS_ENDPOINT_URL=minio.local:9000 (no scheme)
    aws.bad_aws_fallback =
        "WMBT_KV_S3_ENDPOINT=\"minio.local:9000\" ...: from fallback AWS_ENDPOINT_URL";
    EXPECT_TRUE(OpenL2FromConfig(aws).ok()) << "no bucket: local disk, the AWS value unused";
    aws.s3_bucket = "some-bucket";
    auto refused = OpenL2FromConfig(aws);
    EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("AWS_ENDPOINT_URL"), std::string::npos)
        << refused.status().ToString();
  }
  c.s3_bucket = "some-bucket";
  c.s3_endpoint = "http://127.0.0.1:1";
  EXPECT_EQ(c.Set("WMBT_KV_S3_ADDRESSING", "sideways").code(), Code::kInvalidArgument);
  // Every S3 setting is a Config setting (documented in docs/configuration.md), applied here.
  for (auto [name, value] : {std::pair{"WMBT_KV_S3_CONCURRENCY", "7"},
                             {"WMBT_KV_LOCAL_DEV", "1"},
                             {"WMBT_KV_S3_ADDRESSING", "path"},
                             {"WMBT_KV_S3_CREATE_BUCKET", "1"},
                             {"WMBT_KV_S3_CONNECT_TIMEOUT_MS", "1234"},
                             {"WMBT_KV_S3_REQUEST_TIMEOUT_MS", "5678"},
                             {"WMBT_KV_S3_RETRIES", "0"},
                             {"WMBT_KV_S3_PAYLOAD_SIGNING", "signed"},
                             {"WMBT_KV_S3_CA_FILE", "/etc/ssl/certs/ca-certificates.crt"}}) {
    ASSERT_TRUE(c.Set(name, value).ok()) << name;
  }
  auto o = S3OptionsFromConfig(c, {});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->requests_inflight_max, 7u);
  EXPECT_TRUE(o->allow_dev_credentials);
  EXPECT_TRUE(o->create_bucket);
  EXPECT_EQ(o->addressing, S3Addressing::kPath);
  EXPECT_EQ(o->connect_timeout_ms, 1234u);
  EXPECT_EQ(o->request_timeout_ms, 5678u);
  EXPECT_EQ(o->retries_max, 0u);
  EXPECT_EQ(o->payload_signing, S3PayloadSigning::kSigned);
  EXPECT_EQ(o->ca_file, "/etc/ssl/certs/ca-certificates.crt");
  // AWS_CA_BUNDLE fills the CA file when WMBT_KV_S3_CA_FILE is unset.
  auto from_env = Config::FromLookup([](const char* name) -> std::optional<std::string> {
    if (std::string_view(name) == "AWS_CA_BUNDLE") return "/some/ca.pem";
    return std::nullopt;
  });
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->s3_ca_file, "/some/ca.pem");
}

TEST_F(S3Test, TheProbePassesAndFindsConditionalWritesOnTheTestServer) {
  auto store = Scratch();
  std::string warning;
  Status probe = store->s3()->Probe("kv/", &warning);
  ASSERT_TRUE(probe.ok()) << probe.ToString();
  EXPECT_TRUE(store->s3()->HonoursConditionalWrites()) << warning;
  EXPECT_TRUE(warning.empty()) << warning;
  auto page = store->List("", "", "", 1000);  // the probe key is gone again
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->objects.empty());
}

// A write of the probe whose answer is lost, retried into a 412 of the first write's object: the
// retry took that object for its own (one body for every probe write: its MD5 matched) and so
// "a second If-None-Match: * write succeeded" turned conditional writes off for the process.
TEST_F(S3Test, AProbeWriteWhoseAnswerWasLostDoesNotTurnConditionalWritesOff) {
  auto store = Scratch();
  std::atomic<int> puts{0};
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t attempt) {
    HttpFault f;
    if (r.method == "PUT" && attempt == 0 && r.key.find("wombatkv-probe") != std::string::npos &&
        ++puts >= 2) {
      f.kind = HttpFault::Kind::kResetAfterApply;  // the second and third writes
    }
    return f;
  });
  std::string warning;
  Status probe = store->s3()->Probe("kv/", &warning);
  ASSERT_TRUE(probe.ok()) << probe.ToString();
  EXPECT_EQ(puts.load(), 3);
  EXPECT_TRUE(store->s3()->HonoursConditionalWrites()) << warning;
  EXPECT_TRUE(warning.empty()) << warning;
}

// A probe write that cannot be made at all (every attempt throttled) says nothing of the server's
// conditional writes: the probe fails, naming the cause, instead of turning them off.
TEST_F(S3Test, AProbeWriteThatCannotBeMadeFailsTheProbe) {
  S3Options o = BaseOptions(FreshBucketName("s3"));
  o.retries_max = 2;
  auto store = Scratch(o);
  std::atomic<int> puts{0};
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t attempt) {
    HttpFault f;
    if (r.method == "PUT" && r.key.find("wombatkv-probe") != std::string::npos) {
      if (attempt == 0) ++puts;
      if (puts.load() == 2) f.kind = HttpFault::Kind::kStatus;  // 503 SlowDown, every attempt
    }
    return f;
  });
  std::string warning;
  Status probe = store->s3()->Probe("kv/", &warning);
  EXPECT_EQ(probe.code(), Code::kUnavailable) << probe.ToString();
  EXPECT_NE(probe.message().find("second write"), std::string::npos) << probe.ToString();
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_TRUE(store->s3()->HonoursConditionalWrites());
}

// The settings that reach the test server, with this bucket.
Config ConfigFor(const std::string& bucket) {
  Config c;
  c.s3_endpoint = Server().endpoint;
  c.s3_bucket = bucket;
  c.s3_region = Server().region;
  c.s3_access_key = Server().access_key;
  c.s3_secret_key = Server().secret_key;
  return c;
}

TEST_F(S3Test, OpenL2FromConfigProbesAndCanCreateTheBucket) {
  Config c = ConfigFor(FreshBucketName("cfg"));
  auto missing = OpenL2FromConfig(c);
  EXPECT_EQ(missing.status().code(), Code::kFailedPrecondition) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find(c.s3_bucket), std::string::npos);
  ASSERT_TRUE(c.Set("WMBT_KV_S3_CREATE_BUCKET", "1").ok());
  auto store = OpenL2FromConfig(c);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_NE(store->get(), nullptr);
  EXPECT_TRUE((*store)->HonoursConditionalWrites());
  EXPECT_TRUE((*store)->DeleteBucket().ok());
}

// A bucket deleted while in use: a request after the probe says so (not the probe's advice about
// host names and addressing, which fits a bucket that was never found).
TEST_F(S3Test, ABucketDeletedWhileInUseIsSaidToBeGone) {
  Config c = ConfigFor(FreshBucketName("gone"));
  ASSERT_TRUE(c.Set("WMBT_KV_S3_CREATE_BUCKET", "1").ok());
  auto store = OpenL2FromConfig(c);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->DeleteBucket().ok());
  auto put = (*store)->Put("k", {AsBytes("v")}, {});
  EXPECT_EQ(put.status().code(), Code::kFailedPrecondition) << put.status().ToString();
  EXPECT_NE(put.status().message().find("no longer exists"), std::string::npos)
      << put.status().ToString();
  EXPECT_EQ(put.status().message().find("addressing"), std::string::npos)
      << put.status().ToString();
}

TEST_F(S3Test, WrongCredentialsAreAClearFailedPreconditionThatHidesTheSecret) {
  if (Server().server == "moto") {
    GTEST_SKIP() << "moto checks no signatures; run against radosgw "
                    "(scripts/s3-server.sh start radosgw) to test credentials";
  }
  auto good = Scratch();
  S3Options bad = BaseOptions(good->s3()->options().bucket);
  bad.secret_key = "definitely-the-wrong-secret-4f1c";
  auto store = S3ObjectStore::Open(bad);
  ASSERT_TRUE(store.ok());
  Status probe = (*store)->Probe();
  EXPECT_EQ(probe.code(), Code::kFailedPrecondition) << probe.ToString();
  EXPECT_NE(probe.message().find("WMBT_KV_S3_ACCESS_KEY/SECRET"), std::string::npos);
  EXPECT_EQ(probe.message().find(bad.secret_key), std::string::npos);
  auto put = (*store)->Put("k", {AsBytes("v")}, {});
  EXPECT_EQ(put.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(put.status().message().find("403"), std::string::npos) << put.status().ToString();
  EXPECT_NE(put.status().message().find("request id"), std::string::npos);
  EXPECT_NE(put.status().message().find("k"), std::string::npos);
  EXPECT_EQ(put.status().message().find(bad.secret_key), std::string::npos);

  bad.secret_key = Server().secret_key;
  bad.access_key = "NOSUCHACCESSKEY";
  auto unknown = S3ObjectStore::Open(bad);
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ((*unknown)->Probe().code(), Code::kFailedPrecondition);
}

TEST_F(S3Test, AMissingKeyIsNotFoundWithTheRequestId) {
  auto store = Scratch();
  auto got = store->Get("no/such/key", 0, kToEnd);
  EXPECT_TRUE(got.status().IsNotFound());
  EXPECT_NE(got.status().message().find("no/such/key"), std::string::npos);
  EXPECT_NE(got.status().message().find("request id"), std::string::npos);
}

// ---- listing at S3's page size ----

TEST_F(S3Test, ExactlyOneThousandKeysAreOnePageWithNoToken) {
  auto store = Scratch();
  for (int i = 0; i < 1000; ++i) {
    char k[32];
    std::snprintf(k, sizeof k, "k/%04d", i);
    ASSERT_TRUE(store->Put(k, {}, {}).ok());
  }
  auto page = store->List("k/", "", "", 1000);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->objects.size(), 1000u);
  EXPECT_TRUE(page->next_token.empty());
  ASSERT_TRUE(store->Put("k/1000", {}, {}).ok());
  page = store->List("k/", "", "", 1000);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->next_token, "k/0999");
  auto rest = store->List("k/", "", page->next_token, 1000);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->objects.size(), 1u);
  EXPECT_EQ(rest->objects[0].key, "k/1000");
  EXPECT_TRUE(rest->next_token.empty());
}

TEST_F(S3Test, AKeyPrefixIsInvisibleToCallers) {
  auto base = Scratch();
  S3Options o = BaseOptions(base->s3()->options().bucket);
  o.key_prefix = "tenant/a/";
  auto store = S3ObjectStore::Open(o);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Put("x/1", {AsBytes("one")}, {}).ok());
  ASSERT_TRUE(base->Put("x/2", {AsBytes("outside")}, {}).ok());
  auto page = (*store)->List("", "/", "", 1000);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->common_prefixes, std::vector<std::string>{"x/"});
  EXPECT_TRUE(base->Head("tenant/a/x/1").ok());
  EXPECT_EQ((*store)->Head("x/1")->key, "x/1");
  EXPECT_TRUE((*store)->Head("x/2").status().IsNotFound());
}

// ---- multipart and ranges ----

TEST_F(S3Test, LargeObjectsGoUpInPartsAndReadBackByRange) {
  S3Options o = BaseOptions(FreshBucketName("mp"));
  o.multipart_threshold_bytes = 6ull << 20;
  o.multipart_part_bytes = 5ull << 20;
  auto store = Scratch(o);
  // 13 MiB + 5 bytes in uneven caller parts: three S3 parts (5, 5, 3 MiB + 5).
  const std::string a = Pattern(3 << 20, 1), b = Pattern(7 << 20, 2), c = Pattern((3 << 20) + 5, 3);
  auto etag = store->Put("big/object", {AsBytes(a), AsBytes(b), AsBytes(c)}, {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_NE(etag->find('-'), std::string::npos) << "a multipart ETag ends in -<parts>: " << *etag;
  const std::string all = a + b + c;
  auto head = store->Head("big/object");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->size, all.size());
  EXPECT_EQ(head->etag, *etag);
  auto got = store->Get("big/object", 0, kToEnd);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(AsChars(got->bytes->view()) == all);
  // A range across the first part boundary, and the tail.
  const uint64_t at = (5ull << 20) - 100;
  auto mid = store->Get("big/object", at, 300);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(AsChars(mid->bytes->view()), all.substr(at, 300));
  EXPECT_EQ(mid->object_size, all.size());
  auto tail = store->Get("big/object", all.size() - 7, kToEnd);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(AsChars(tail->bytes->view()), all.substr(all.size() - 7));
  // Conditional writes stay single PUTs (radosgw ignores conditions on multipart completion).
  auto cas = store->Put("big/object", {AsBytes(all)}, {PutMode::kIfMatch, *etag});
  ASSERT_TRUE(cas.ok()) << cas.status().ToString();
  EXPECT_EQ(cas->find('-'), std::string::npos);
  EXPECT_TRUE(store->Put("big/object", {AsBytes(all)}, {PutMode::kIfAbsent, ""}).status()
                  .IsConflict());
}

// Options under which every object above 5 MiB is a multipart upload of 5 MiB parts.
S3Options SmallPartOptions(std::string_view what) {
  S3Options o = BaseOptions(FreshBucketName(what));
  o.multipart_threshold_bytes = o.multipart_part_bytes = 5ull << 20;
  return o;
}

// A completion applied but answered with a lost answer: its retry meets NoSuchUpload, as the
// upload is now the object (AWS's answer; radosgw answers a repeated completion 200, so the
// retry's answer is injected). The put failed (and aborted an upload that was gone) although the
// object was written.
TEST_F(S3Test, AMultipartCompletionWhoseAnswerWasLostStillSucceeds) {
  auto store = Scratch(SmallPartOptions("mpc"));
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t attempt) {
    HttpFault f;
    bool completes = false;
    for (const auto& [name, value] : r.query) completes = completes || name == "uploadId";
    if (r.method != "POST" || !completes) return f;
    if (attempt == 0) f.kind = HttpFault::Kind::kResetAfterApply;
    if (attempt == 1) f = HttpFault{HttpFault::Kind::kStatus, 404, "NoSuchUpload"};
    return f;
  });
  const std::string all = Pattern((10u << 20) + 7, 5);
  auto etag = store->Put("completed", {AsBytes(all)}, {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  store->s3()->SetFaultHookForTesting(nullptr);
  auto got = store->Get("completed", 0, kToEnd);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->etag, *etag);
  EXPECT_TRUE(AsChars(got->bytes->view()) == all);
}

// The parts of one upload are in flight together, at most multipart_parts_inflight_max of them.
// Proven with the fault hook, which runs on the thread about to send a part: each part waits
// there (up to 10 s, so a sequential upload fails rather than hangs) until `bound` parts have
// arrived. Sent one at a time, the first part would wait alone.
TEST_F(S3Test, MultipartPartsGoUpInParallelUpToTheBound) {
  S3Options o = SmallPartOptions("mpp");
  o.multipart_parts_inflight_max = 3;
  auto store = Scratch(o);
  std::mutex mu;
  std::condition_variable cv;
  size_t waiting = 0, waiting_max = 0, parts_sent = 0;
  bool released = false;
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t) {
    bool is_part = false;
    for (const auto& [name, value] : r.query) is_part = is_part || name == "partNumber";
    if (!is_part) return HttpFault{};
    std::unique_lock<std::mutex> lock(mu);
    ++parts_sent;
    waiting_max = std::max(waiting_max, ++waiting);
    if (waiting >= 3) released = true;
    cv.notify_all();
    // A real wait on a test-only condition: the store's Clock is not involved.
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return released; });
    --waiting;
    return HttpFault{};
  });
  // 7 parts (6 × 5 MiB and a 1 KiB tail).
  const std::string all = Pattern((30u << 20) + 1024, 9);
  auto etag = store->Put("parallel", {AsBytes(all)}, {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_TRUE(etag->ends_with("-7")) << *etag;
  EXPECT_EQ(parts_sent, 7u);
  EXPECT_EQ(waiting_max, 3u) << "parts in flight at once: never more than the bound, and more "
                                "than one";
  store->s3()->SetFaultHookForTesting(nullptr);
  auto got = store->Get("parallel", 0, kToEnd);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(AsChars(got->bytes->view()) == all) << "parts reassembled in order";
}

// A part that fails for good aborts the whole upload: nothing is published under the key.
TEST_F(S3Test, AFailedPartAbortsTheParallelUpload) {
  S3Options o = SmallPartOptions("mpf");
  o.retries_max = 1;
  auto store = Scratch(o);
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t) {
    HttpFault f;
    for (const auto& [name, value] : r.query) {
      if (name == "partNumber" && value == "2") f.kind = HttpFault::Kind::kStatus;  // 503
    }
    return f;
  });
  const std::string all = Pattern(15u << 20, 4);
  auto put = store->Put("doomed", {AsBytes(all)}, {});
  ASSERT_EQ(put.status().code(), Code::kUnavailable) << put.status().ToString();
  EXPECT_NE(put.status().message().find("upload part 2"), std::string::npos)
      << put.status().ToString();
  store->s3()->SetFaultHookForTesting(nullptr);
  EXPECT_TRUE(store->Head("doomed").status().IsNotFound());
}

TEST_F(S3Test, RangesOnAnEmptyObject) {
  auto store = Scratch();
  ASSERT_TRUE(store->Put("e", {}, {}).ok());
  auto got = store->Get("e", 0, 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->bytes->size(), 0u);
  EXPECT_EQ(got->object_size, 0u);
  EXPECT_EQ(store->Get("e", 1, 10).status().code(), Code::kInvalidArgument);
}

// ---- retries and faults (injected at the transport seam, against the real server) ----

TEST_F(S3Test, ThrottlingIsRetriedWithBackoffOnTheInjectedClock) {
  auto store = Scratch();
  std::atomic<int> calls{0};
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t attempt) {
    HttpFault f;
    if (r.method == "PUT") {
      ++calls;
      if (attempt < 3) f.kind = HttpFault::Kind::kStatus;  // 503 SlowDown
    }
    return f;
  });
  const uint64_t sleeps_before = s3test::TestClock()->sleeps.load();
  const ObjectStoreCounters before = store->s3()->Counters();
  auto put = store->Put("throttled", {AsBytes("v")}, {});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(calls.load(), 4);
  EXPECT_GE(s3test::TestClock()->sleeps.load() - sleeps_before, 3u);
  // What /metrics shows as wombatkv_l2_{attempts,retries,throttled}_total.
  const ObjectStoreCounters after = store->s3()->Counters();
  EXPECT_EQ(after.attempts - before.attempts, 4u);
  EXPECT_EQ(after.retries - before.retries, 3u);
  EXPECT_EQ(after.throttled - before.throttled, 3u);
  store->s3()->SetFaultHookForTesting(nullptr);
  auto got = store->Get("throttled", 0, kToEnd);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(AsChars(got->bytes->view()), "v");
}

TEST_F(S3Test, ExhaustedRetriesAreUnavailableNamingTheCause) {
  S3Options o = BaseOptions(FreshBucketName("s3"));
  o.retries_max = 3;
  auto store = Scratch(o);
  std::atomic<int> calls{0};
  store->s3()->SetFaultHookForTesting([&](const HttpRequest&, uint32_t) {
    ++calls;
    return HttpFault{HttpFault::Kind::kStatus, 503, "SlowDown"};
  });
  auto put = store->Put("k", {AsBytes("v")}, {});
  EXPECT_EQ(put.status().code(), Code::kUnavailable);
  EXPECT_NE(put.status().message().find("SlowDown"), std::string::npos);
  EXPECT_NE(put.status().message().find("4 attempts"), std::string::npos)
      << put.status().ToString();
  EXPECT_NE(put.status().message().find("k"), std::string::npos);
  EXPECT_EQ(calls.load(), 4);
}

TEST_F(S3Test, ClientErrorsAreNeverRetried) {
  auto store = Scratch();
  std::atomic<int> calls{0};
  store->s3()->SetFaultHookForTesting([&](const HttpRequest&, uint32_t) {
    ++calls;
    return HttpFault{HttpFault::Kind::kStatus, 403, "AccessDenied"};
  });
  auto got = store->Get("k", 0, kToEnd);
  EXPECT_EQ(got.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(S3Test, ResetsAndTruncatedBodiesAreRetried) {
  auto store = Scratch();
  const std::string v = Pattern(100000, 9);
  ASSERT_TRUE(store->Put("k", {AsBytes(v)}, {}).ok());
  store->s3()->SetFaultHookForTesting([&](const HttpRequest&, uint32_t attempt) {
    HttpFault f;
    if (attempt == 0) f.kind = HttpFault::Kind::kConnectionReset;
    if (attempt == 1) f.kind = HttpFault::Kind::kTruncatedBody;
    return f;
  });
  auto got = store->Get("k", 0, kToEnd);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(AsChars(got->bytes->view()) == v);
}

// A server that stops answering (every attempt of a request reset, or 503s past the retries)
// makes the store unreachable, saying why; a missing key is an answer; the next answer clears it.
TEST_F(S3Test, ReachabilityFollowsWhetherTheServerAnswers) {
  auto store = Scratch();
  EXPECT_TRUE(store->Reachability().ok());
  EXPECT_EQ(store->Head("absent").status().code(), Code::kNotFound);
  EXPECT_TRUE(store->Reachability().ok()) << "a 404 is an answer";
  store->s3()->SetFaultHookForTesting([](const HttpRequest&, uint32_t) {
    HttpFault f;
    f.kind = HttpFault::Kind::kConnectionReset;
    return f;
  });
  EXPECT_EQ(store->Head("absent").status().code(), Code::kUnavailable);
  Status down = store->Reachability();
  EXPECT_EQ(down.code(), Code::kUnavailable);
  EXPECT_NE(down.message().find("every request has failed for"), std::string::npos)
      << down.ToString();
  store->s3()->SetFaultHookForTesting([](const HttpRequest&, uint32_t) {
    HttpFault f;
    f.kind = HttpFault::Kind::kStatus;  // 503 SlowDown on every attempt
    return f;
  });
  EXPECT_EQ(store->Head("absent").status().code(), Code::kUnavailable);
  EXPECT_NE(store->Reachability().message().find("503"), std::string::npos)
      << store->Reachability().ToString();
  store->s3()->SetFaultHookForTesting(nullptr);
  EXPECT_EQ(store->Head("absent").status().code(), Code::kNotFound);
  EXPECT_TRUE(store->Reachability().ok());
}

TEST_F(S3Test, AConditionalPutWhoseAnswerWasLostStillSucceeds) {
  auto store = Scratch();
  // The first attempt is applied but its answer lost; the retry then meets our own object (412).
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t attempt) {
    HttpFault f;
    if (r.method == "PUT" && attempt == 0) f.kind = HttpFault::Kind::kResetAfterApply;
    return f;
  });
  auto put = store->Put("blob", {AsBytes("content")}, {PutMode::kIfAbsent, ""});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  auto cas = store->Put("blob", {AsBytes("next")}, {PutMode::kIfMatch, *put});
  ASSERT_TRUE(cas.ok()) << cas.status().ToString();
  store->s3()->SetFaultHookForTesting(nullptr);
  EXPECT_EQ(store->Head("blob")->etag, *cas);
  // Someone else's object is still a conflict.
  store->s3()->SetFaultHookForTesting([&](const HttpRequest& r, uint32_t attempt) {
    HttpFault f;
    if (r.method == "PUT" && attempt == 0) f.kind = HttpFault::Kind::kResetAfterApply;
    return f;
  });
  auto other = store->Put("blob", {AsBytes("different")}, {PutMode::kIfMatch, *put});
  EXPECT_TRUE(other.status().IsConflict()) << other.status().ToString();
}

TEST(S3Stall, AServerThatNeverAnswersTimesOutAndIsUnavailableAfterRetries) {
  // A listening socket nobody accepts on: connections complete (the kernel's backlog), requests
  // are sent, and no answer ever comes — a stalled server.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  S3Options o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  o.bucket = "stalled";
  o.access_key = "a";
  o.secret_key = "secret-never-shown";
  o.request_timeout_ms = 200;
  o.retries_max = 2;
  o.clock = s3test::TestClock();
  auto store = S3ObjectStore::Open(o);
  ASSERT_TRUE(store.ok());
  auto got = (*store)->Get("k", 0, kToEnd);
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().ToString();
  EXPECT_NE(got.status().message().find("3 attempts"), std::string::npos);
  EXPECT_NE(got.status().message().find("get k"), std::string::npos);
  EXPECT_EQ(got.status().message().find(o.secret_key), std::string::npos);
  // With a long request timeout, an attempt ends once no byte has moved for the stall time:
  // a stopped server fails requests in seconds, not after the timeout sized for large objects.
  o.request_timeout_ms = 600'000;
  o.stalled_ms = 1000;
  o.retries_max = 0;
  auto patient = S3ObjectStore::Open(o);
  ASSERT_TRUE(patient.ok());
  got = (*patient)->Get("k", 0, kToEnd);
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().ToString();
  EXPECT_NE(got.status().message().find("Less than 1 bytes/sec transferred the last 1 seconds"),
            std::string::npos)
      << got.status().ToString();
  ::close(fd);
}

// A loopback HTTP listener: its thread hands each connection it accepts to `serve`, then closes
// it, one at a time, until destroyed.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::function<void(int)> serve) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen";
    }
    endpoint_ = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // shut down
        serve_(c);
        ::close(c);
      }
    });
  }
  ~LoopbackServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  std::function<void(int)> serve_;
  int fd_ = -1;
  std::string endpoint_;
  std::thread thread_;
};

// A server that answers every request with `answer` (whole HTTP response text), one connection at
// a time, until destroyed.
class CannedServer {
 public:
  explicit CannedServer(std::string answer)
      : answer_(std::move(answer)), server_([this](int c) {
          std::string got;
          char buf[4096];
          while (got.find("\r\n\r\n") == std::string::npos) {
            const ssize_t n = ::read(c, buf, sizeof buf);
            if (n <= 0) break;
            got.append(buf, static_cast<size_t>(n));
          }
          (void)!::write(c, answer_.data(), answer_.size());
        }) {}
  const std::string& endpoint() const { return server_.endpoint(); }

 private:
  const std::string answer_;
  LoopbackServer server_;  // last: its thread uses answer_
};

// A server that takes requests one after another, on as many connections as the client opens,
// and meets request i with steps[i]: an answer (the connection kept open), or a hang-up after
// reading the whole request, before any answer.
class ScriptedServer {
 public:
  struct Step {
    std::string answer;  // empty: hang up
  };
  explicit ScriptedServer(std::vector<Step> steps)
      : steps_(std::move(steps)), server_([this](int c) { Serve(c); }) {}
  const std::string& endpoint() const { return server_.endpoint(); }
  // The request lines seen, in order ("PUT /bucket/key HTTP/1.1").
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> g(mu_);
    return requests_;
  }

 private:
  void Serve(int c) {
    std::string got;
    char buf[4096];
    for (;;) {
      size_t end;
      while ((end = got.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) return;
        got.append(buf, static_cast<size_t>(n));
      }
      size_t body = 0;
      const size_t cl = got.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) body = std::stoul(got.substr(cl + 16));
      while (got.size() < end + 4 + body) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) return;
        got.append(buf, static_cast<size_t>(n));
      }
      size_t i;
      {
        std::lock_guard<std::mutex> g(mu_);
        requests_.push_back(got.substr(0, got.find("\r\n")));
        i = requests_.size() - 1;
      }
      got.erase(0, end + 4 + body);
      if (i >= steps_.size() || steps_[i].answer.empty()) return;  // hang up
      (void)!::write(c, steps_[i].answer.data(), steps_[i].answer.size());
    }
  }

  const std::vector<Step> steps_;
  std::mutex mu_;
  std::vector<std::string> requests_;  // GUARDED_BY(mu_)
  LoopbackServer server_;              // last: its thread uses the members above
};

// Options for a store on `server`, with made-up keys.
template <typename Server>
S3Options CannedOptions(const Server& server, std::string bucket, uint32_t retries) {
  S3Options o;
  o.endpoint = server.endpoint();
  o.bucket = std::move(bucket);
  o.access_key = "id";
  o.secret_key = "a-secret";
  o.retries_max = retries;
  o.clock = s3test::TestClock();
  return o;
}

// A gateway's 502 with a large HTML page: the status decides (retried, then Unavailable), the
// body is cut to its first MiB — it was taken for a broken transfer (Corruption, not retried,
// "more than the 18446744073709551615 bytes asked for").
TEST(S3Refusals, AnErrorWithAHugeBodyIsRetriedByItsStatus) {
  const std::string page(2 << 20, '<');
  CannedServer server("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: " +
                      std::to_string(page.size()) + "\r\nConnection: close\r\n\r\n" + page);
  auto store = S3ObjectStore::Open(CannedOptions(server, "gateway", 2));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto got = (*store)->Get("k", 0, kToEnd);
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().ToString();
  EXPECT_NE(got.status().message().find("3 attempts"), std::string::npos)
      << got.status().ToString();
  EXPECT_NE(got.status().message().find("502"), std::string::npos) << got.status().ToString();
}

class FixedWallClock final : public Clock {
 public:
  explicit FixedWallClock(uint64_t wall_us) : wall_us_(wall_us) {}
  uint64_t NowMicros() override { return RealClock()->NowMicros(); }
  uint64_t WallMicros() override { return wall_us_; }
  void SleepMicros(uint64_t) override {}
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               uint64_t micros) override {
    return RealClock()->WaitFor(cv, lock, micros);
  }

 private:
  const uint64_t wall_us_;
};

// A refusal (403) says what is most likely wrong: the clock when the server's Date header is far
// from this host's, missing credentials when none are set.
TEST(S3Refusals, AForbiddenAnswerNamesTheClockOrTheMissingCredentials) {
  CannedServer server(
      "HTTP/1.1 403 Forbidden\r\nDate: Sun, 06 Dec 2026 09:00:00 GMT\r\n"
      "Content-Length: 0\r\nConnection: close\r\n\r\n");
  const uint64_t server_wall = s3::ParseHttpDateMicros("Sun, 06 Dec 2026 09:00:00 GMT");
  ASSERT_NE(server_wall, 0u);
  auto refusal = [&](uint64_t wall_us, std::string access, std::string secret) {
    FixedWallClock clock(wall_us);
    S3Options o;
    o.endpoint = server.endpoint();
    o.bucket = "refusing";
    o.access_key = std::move(access);
    o.secret_key = std::move(secret);
    o.clock = &clock;
    auto store = S3ObjectStore::Open(o);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? (*store)->Get("k", 0, kToEnd).status() : store.status();
  };
  const uint64_t hour = 3600'000'000ull;
  Status ahead = refusal(server_wall + 2 * hour + 300'000'000, "id", "a-secret");
  EXPECT_EQ(ahead.code(), Code::kFailedPrecondition);
  EXPECT_NE(ahead.message().find("this host's clock is 2h 5m ahead of the S3 server's"),
            std::string::npos)
      << ahead.ToString();
  Status behind = refusal(server_wall - 24 * hour, "id", "a-secret");
  EXPECT_NE(behind.message().find("24h 0m behind"), std::string::npos) << behind.ToString();
  Status none = refusal(server_wall, "", "");
  EXPECT_NE(none.message().find("no credentials are set"), std::string::npos) << none.ToString();
  Status half = refusal(server_wall + 60'000'000, "id", "");
  EXPECT_NE(half.message().find("no secret key"), std::string::npos) << half.ToString();
  Status keys = refusal(server_wall, "id", "a-secret");
  EXPECT_NE(keys.message().find("check WMBT_KV_S3_ACCESS_KEY/SECRET"), std::string::npos)
      << keys.ToString();
  // Under 15 minutes off, S3 signs fine: the keys are the suspects, the skew a detail.
  Status near = refusal(server_wall + 7 * 60'000'000ull, "id", "a-secret");
  EXPECT_NE(near.message().find("check WMBT_KV_S3_ACCESS_KEY/SECRET"), std::string::npos)
      << near.ToString();
  EXPECT_NE(near.message().find("(0h 7m ahead of the server's)"), std::string::npos)
      << near.ToString();
}

// A reused connection that dies before answering a PUT is retried by libcurl itself, the body
// sent again: if the first send was applied, the put-if-absent meets its own object (412). That
// must be found out (the object's MD5 is the body's) and answered OK, not Conflict — for a CAS
// publish, a Conflict naming its own head.
TEST(S3Refusals, APutLibcurlSentAgainThatMeetsItselfIsItsOwnWrite) {
  const std::vector<ByteView> body = {ByteView(reinterpret_cast<const uint8_t*>("payload"), 7)};
  const std::string md5 = s3::Md5Hex(body);
  ScriptedServer server({
      {"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"},  // HEAD: the connection kept
      {""},  // the PUT on the reused connection: read, applied, no answer
      {"HTTP/1.1 412 Precondition Failed\r\nContent-Type: application/xml\r\n"
       "Content-Length: 46\r\n\r\n<Error><Code>PreconditionFailed</Code></Error>"},
      {"HTTP/1.1 200 OK\r\nETag: \"" + md5 + "\"\r\nContent-Length: 7\r\n\r\n"},
  });
  auto store = S3ObjectStore::Open(CannedOptions(server, "resent", 0));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->Head("k").status().IsNotFound());
  auto put = (*store)->Put("k", body, PutOptions{PutMode::kIfAbsent});
  const std::vector<std::string> seen = server.requests();
  ASSERT_GE(seen.size(), 3u);
  ASSERT_EQ(seen[1].substr(0, 4), "PUT ") << "the script is off";
  ASSERT_EQ(seen[2].substr(0, 4), "PUT ") << "libcurl did not send the PUT again";
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(*put, md5);
}

// AWS answers a conditional write that met another operation on the key in flight with 409
// ConditionalRequestConflict, meaning "retry": not a Conflict (the key may not even exist).
TEST(S3Refusals, AConditionalRequestConflictIsRetried) {
  ScriptedServer server({
      {"HTTP/1.1 409 Conflict\r\nContent-Type: application/xml\r\nContent-Length: "
       "54\r\n\r\n<Error><Code>ConditionalRequestConflict</Code></Error>"},
      {"HTTP/1.1 200 OK\r\nETag: \"0123\"\r\nContent-Length: 0\r\n\r\n"},
  });
  auto store = S3ObjectStore::Open(CannedOptions(server, "conflicting", 1));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<ByteView> body = {ByteView(reinterpret_cast<const uint8_t*>("x"), 1)};
  auto put = (*store)->Put("k", body, PutOptions{PutMode::kIfAbsent});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(server.requests().size(), 2u);
}

// A server that ignores If-None-Match (the probe's second write succeeds): the probe still
// passes, warns, and turns conditional writes off, after which a put-if-absent is a HEAD and
// then, only if the key is absent, a plain PUT.
TEST(S3Refusals, AServerThatIgnoresConditionalWritesIsFoundByTheProbe) {
  const std::string ok = "HTTP/1.1 200 OK\r\nETag: \"0123\"\r\nContent-Length: 0\r\n\r\n";
  const std::string absent = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
  ScriptedServer server({
      {ok},                                 // HEAD bucket
      {ok},                                 // PUT If-None-Match: *
      {ok},                                 // the same again: applied, not refused
      {"HTTP/1.1 204 No Content\r\n\r\n"},  // DELETE of the probe key
      {"HTTP/1.1 200 OK\r\nETag: \"0123\"\r\nLast-Modified: Wed, 02 Dec 2026 10:00:00 GMT\r\n"
       "Content-Length: 5\r\n\r\n"},  // HEAD k: there
      {absent},                       // HEAD fresh: absent
      {ok},                           // PUT fresh, unconditional
  });
  auto store = S3ObjectStore::Open(CannedOptions(server, "ignoring", 0));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->HonoursConditionalWrites()) << "assumed until the probe says otherwise";
  std::string warning;
  const Status probed = (*store)->Probe("", &warning);
  ASSERT_TRUE(probed.ok()) << probed.ToString();
  EXPECT_FALSE((*store)->HonoursConditionalWrites());
  EXPECT_NE(warning.find("does not support conditional writes"), std::string::npos) << warning;
  EXPECT_NE(warning.find("last-writer-wins"), std::string::npos) << warning;
  const std::vector<ByteView> body = {ByteView(reinterpret_cast<const uint8_t*>("x"), 1)};
  EXPECT_TRUE((*store)->Put("k", body, PutOptions{PutMode::kIfAbsent}).status().IsConflict());
  auto fresh = (*store)->Put("fresh", body, PutOptions{PutMode::kIfAbsent});
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  const std::vector<std::string> seen = server.requests();
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen[4].substr(0, 5), "HEAD ");
  EXPECT_EQ(seen[5].substr(0, 5), "HEAD ");
  EXPECT_EQ(seen[6].substr(0, 4), "PUT ");
}

// A request signed for another region than the bucket's: AWS answers a HEAD with a 400 and no
// body, naming the bucket's region in x-amz-bucket-region. The error says which region to set.
TEST(S3Refusals, AWrongRegionIsNamedFromTheBucketRegionHeader) {
  CannedServer server(
      "HTTP/1.1 400 Bad Request\r\nx-amz-bucket-region: eu-west-1\r\nContent-Length: 0\r\n"
      "Connection: close\r\n\r\n");
  auto store = S3ObjectStore::Open(CannedOptions(server, "elsewhere", 0));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const Status s = (*store)->Head("k").status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("set WMBT_KV_S3_REGION=eu-west-1"), std::string::npos) << s.ToString();
}

// A plain-HTTP request to a port that answers nothing (as a TLS port does) suggests https://.
TEST(S3Refusals, NoAnswerToPlainHttpSuggestsTls) {
  CannedServer silent("");
  auto store = S3ObjectStore::Open(CannedOptions(silent, "silent", 0));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const Status s = (*store)->Get("k", 0, kToEnd).status();
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("WMBT_KV_S3_ENDPOINT needs https://"), std::string::npos)
      << s.ToString();
}

TEST_F(S3Test, ManyThreadsShareTheConnectionPool) {
  S3Options o = BaseOptions(FreshBucketName("s3"));
  o.requests_inflight_max = 4;
  auto store = Scratch(o);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
        const std::string v = Pattern(4096 + i, t * 100 + i);
        if (!store->Put(key, {AsBytes(v)}, {}).ok()) ++failures;
        auto got = store->Get(key, 0, kToEnd);
        if (!got.ok() || AsChars(got->bytes->view()) != v) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace wombatkv
