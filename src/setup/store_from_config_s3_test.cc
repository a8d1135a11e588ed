// End to end on a real S3 server: a store opened the way deployments open it (OpenStoreFromConfig
// with WMBT_KV_BUCKET set) has a local disk cache, and after a restart its cold gets are served
// from that cache without one S3 read (docs/capacity.md).
#include <gtest/gtest.h>

#include <cstring>

#include "object/s3/s3_test_server.h"
#include "setup/store_from_config.h"
#include "store/store_test_util.h"

namespace wombatkv {
namespace {

TEST(StoreFromConfigS3, AnS3StoreHasADiskCacheThatServesColdGetsAfterARestart) {
  ASSERT_TRUE(s3test::Server().configured) << s3test::kNoServer;
  const std::string bucket = s3test::FreshBucketName("dcache");
  s3test::ScratchS3Store scratch(s3test::BaseOptions(bucket));  // creates and removes the bucket
  ASSERT_TRUE(scratch.ok());
  testing::TempDir dir;
  const s3test::TestServer& server = s3test::Server();
  Config config = Config::Defaults([](const char*) { return std::nullopt; });
  config.data_dir = dir.path() + "/data";
  config.s3_endpoint = server.endpoint;
  config.s3_bucket = bucket;
  config.s3_region = server.region;
  config.s3_access_key = server.access_key;
  config.s3_secret_key = server.secret_key;
  ASSERT_TRUE(config.Set("WMBT_KV_CACHE_BYTES", "1").ok());  // RAM keeps nothing unborrowed
  ASSERT_TRUE(config.Set("WMBT_KV_DISK_CACHE_BYTES", "8M").ok());
  const Fingerprint fp = testing::Fp(5);
  const testing::TestChain chain = testing::MakeChain(12, 50000, 7);
  {
    auto store = OpenStoreFromConfig(config);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->PutBlocks("default", fp, chain.Puts()).ok());
    ASSERT_TRUE((*store)->PublishChain("default", fp, chain.tip(), chain.tip()).ok());
  }  // closing drains the write-through fills
  auto store = OpenStoreFromConfig(config);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Store& s = **store;
  EXPECT_EQ(s.DescribeL2().substr(0, 5), "s3://");
  const StoreStats before = s.Stats();
  EXPECT_EQ(before.disk_cache_budget_bytes, 8u << 20);
  EXPECT_EQ(before.disk_cache_files, 12u);
  auto got = s.GetBlocks("default", fp, chain.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (size_t i = 0; i < chain.keys.size(); ++i) {
    ASSERT_EQ(got->payload(i).size(), chain.payloads[i].size());
    EXPECT_EQ(std::memcmp(got->payload(i).data(), chain.payloads[i].data(),
                          chain.payloads[i].size()),
              0);
  }
  const StoreStats after = s.Stats();
  EXPECT_EQ(after.l2_gets, before.l2_gets) << "no S3 read: every block came from the disk cache";
  EXPECT_EQ(after.disk_cache_hits, 12u);
}

TEST(StoreFromConfigS3, TheLocalDirectoryL2GetsNoDiskCache) {
  testing::TempDir dir;
  Config config = Config::Defaults([](const char*) { return std::nullopt; });
  config.data_dir = dir.path() + "/data";
  ASSERT_TRUE(config.Set("WMBT_KV_DISK_CACHE_BYTES", "8M").ok());
  EXPECT_EQ(DiskCacheBudget(config, config.data_dir), 0u);
  auto store = OpenStoreFromConfig(config);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Stats().disk_cache_budget_bytes, 0u);
}

}  // namespace
}  // namespace wombatkv
