// End to end: the embedded Store with S3 as its L2 (SPEC §3: L2 is the source of truth).
#include <filesystem>
#include <mutex>

#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "object/s3/s3_http.h"
#include "object/s3/s3_test_server.h"
#include "store/store_test_util.h"

namespace wombatkv {
namespace {

using s3test::ScratchS3Store;
using s3test::Server;
using testing::MakeChain;
using testing::TestChain;

const Fingerprint kFp = testing::Fp(7);

class S3StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Server().configured) << s3test::kNoServer;
    l2_ = std::make_unique<ScratchS3Store>("store");
    ASSERT_TRUE(l2_->ok());
  }
  StoreOptions Options(int compress_level = 0) {
    StoreOptions o;
    o.block_compress_level = compress_level;
    o.data_dir = dir_.path() + "/data";
    o.object_store = l2_.get();
    o.cache_bytes_max = 64 << 20;
    o.upload_threads = 4;
    o.log = [this](LogLevel, const std::string& m) {
      std::lock_guard<std::mutex> g(log_mu_);  // upload threads log failed uploads
      log_.push_back(m);
    };
    return o;
  }
  std::unique_ptr<Store> Open(int compress_level = 0) {
    auto s = Store::Open(Options(compress_level));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  testing::TempDir dir_;
  std::unique_ptr<ScratchS3Store> l2_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(S3StoreTest, EverythingPublishedComesBackFromS3AloneAfterTheDataDirectoryIsWiped) {
  const TestChain a = MakeChain(24, 64 << 10, 1), b = MakeChain(5, 3000, 2);
  const std::string sidecar = "sidecar bytes for the tip of a";
  {
    auto s = Open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->PutBlocks("default", kFp, a.Puts()).ok());
    auto v = s->PublishChain("default", kFp, a.tip(), a.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(s->PutBlocks("other", kFp, b.Puts()).ok());
    ASSERT_TRUE(s->PublishChain("other", kFp, b.tip(), b.tip()).ok());
    ASSERT_TRUE(s->PutSidecar("default", kFp, a.tip(), AsBytes(sidecar)).ok());
    EXPECT_EQ(s->DescribeL2().substr(0, 5), "s3://");
  }
  std::filesystem::remove_all(dir_.path() + "/data");

  auto s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(*s->LookupPrefix("default", kFp, a.keys), 24u);
  EXPECT_EQ(*s->LookupPrefix("other", kFp, b.keys), 5u);
  auto got = s->GetBlocks("default", kFp, a.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (size_t i = 0; i < a.keys.size(); ++i) {
    EXPECT_TRUE(std::ranges::equal(got->payload(i), a.payloads[i])) << "block " << i;
  }
  auto got_b = s->GetBlocks("other", kFp, b.keys);
  ASSERT_TRUE(got_b.ok());
  EXPECT_TRUE(std::ranges::equal(got_b->payload(4), b.payloads[4]));
  auto side = s->GetSidecar("default", kFp, a.tip());
  ASSERT_TRUE(side.ok()) << side.status().ToString();
  EXPECT_EQ(AsChars(side->view()), sidecar);
  EXPECT_EQ(s->ListChains("").value().size(), 2u);
}

TEST_F(S3StoreTest, CompressedBlobsAreReadAndReusedByAStoreThatDoesNotCompress) {
  // WMBT_KV_BLOCK_COMPRESS over real S3: compressible blocks below and above the size that is
  // looked for first; the second store finds each blob by HEAD and a 48-byte ranged GET.
  TestChain c = MakeChain(4, 70 << 10, 3);
  c.payloads[1].resize(3000);
  for (auto& p : c.payloads) {
    for (size_t i = 0; i < p.size(); ++i) p[i] = i % 4 >= 2 ? 0 : p[i];
  }
  std::vector<std::string> etags;
  {
    auto s = Open(/*compress_level=*/3);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->PutBlocks("default", kFp, c.Puts()).ok());
    auto v = s->PublishChain("default", kFp, c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    for (const auto& p : c.payloads) {
      auto head = l2_->Head(layout::BlobKey("kv", "default", HashPayload(p)));
      ASSERT_TRUE(head.ok()) << head.status().ToString();
      EXPECT_LT(head->size, layout::kEnvelopeHeaderBytes + p.size() * 3 / 4);
      etags.push_back(head->etag);
    }
  }
  std::filesystem::remove_all(dir_.path() + "/data");
  auto s = Open(/*compress_level=*/0);
  ASSERT_NE(s, nullptr);
  auto got = s->GetBlocks("default", kFp, c.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (size_t i = 0; i < c.keys.size(); ++i) {
    EXPECT_TRUE(std::ranges::equal(got->payload(i), c.payloads[i])) << "block " << i;
  }
  // The same bytes put again by this store: each upload finds its blob in S3 and sends nothing.
  ASSERT_TRUE(s->PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(s->PublishChain("default", kFp, c.tip(), c.tip()).ok());
  for (size_t i = 0; i < c.payloads.size(); ++i) {
    auto head = l2_->Head(layout::BlobKey("kv", "default", HashPayload(c.payloads[i])));
    ASSERT_TRUE(head.ok());
    EXPECT_EQ(head->etag, etags[i]) << "blob " << i << " was written again";
  }
}

TEST_F(S3StoreTest, AChainIsNotPublishedWhenItsBlocksCannotReachS3) {
  // Every blob upload meets 503 SlowDown until the retries run out.
  l2_->s3()->SetFaultHookForTesting([](const s3::HttpRequest& r, uint32_t) {
    s3::HttpFault f;
    if (r.method == "PUT" && r.key.find("/blob/") != std::string::npos) {
      f.kind = s3::HttpFault::Kind::kStatus;
    }
    return f;
  });
  const TestChain a = MakeChain(4, 4096, 3);
  {
    auto s = Open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->PutBlocks("default", kFp, a.Puts()).ok());
    auto v = s->PublishChain("default", kFp, a.tip(), a.tip());
    EXPECT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), Code::kUnavailable) << v.status().ToString();
  }
  l2_->s3()->SetFaultHookForTesting(nullptr);
  // No head in S3: a fresh store finds nothing to serve.
  auto heads = l2_->List("", "", "", 1000);
  ASSERT_TRUE(heads.ok());
  for (const auto& o : heads->objects) {
    EXPECT_EQ(o.key.find("/chain/"), std::string::npos) << o.key;
  }
  std::filesystem::remove_all(dir_.path() + "/data");
  auto s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(*s->LookupPrefix("default", kFp, a.keys), 0u);
}

// G11 on a real S3 server: a second host with WMBT_KV_REFRESH_INTERVAL sees the first host's
// publishes by itself, new chains and extended ones, and reports how stale its view is.
// Bounded by a minute of polling, not a timing assertion.
TEST_F(S3StoreTest, AHostWithARefreshIntervalSeesAnotherHostsPublishesByItself) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  StoreOptions ob = Options();
  ob.data_dir = dir_.path() + "/host-b";
  ob.refresh_interval_ms = 20;
  auto b = Store::Open(ob);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Clock* clock = RealClock();
  auto sees = [&](const TestChain& c) {
    const uint64_t give_up = clock->NowMicros() + 60'000'000;
    while (*(*b)->LookupPrefix("default", kFp, c.keys) < c.keys.size() &&
           clock->NowMicros() < give_up) {
      clock->SleepMicros(2'000);
    }
    return *(*b)->LookupPrefix("default", kFp, c.keys) == c.keys.size();
  };
  const TestChain c = MakeChain(3, 2000, 5), longer = MakeChain(6, 2000, 5);
  ASSERT_TRUE(a->PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(a->PublishChain("default", kFp, c.tip(), c.tip()).ok());
  EXPECT_TRUE(sees(c)) << "a new chain";
  ASSERT_TRUE(a->PutBlocks("default", kFp, longer.Puts(3)).ok());
  ASSERT_TRUE(a->PublishChain("default", kFp, longer.tip(), longer.tip()).ok());
  EXPECT_TRUE(sees(longer)) << "a chain extended";
  auto got = (*b)->GetBlocks("default", kFp, longer.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->payload(5), longer.payloads[5]));
  const StoreStats st = (*b)->Stats();
  EXPECT_GE(st.refreshes, 2u);  // the open and the one that loaded c, at least
  EXPECT_EQ(st.refresh_failures, 0u);
}

}  // namespace
}  // namespace wombatkv
