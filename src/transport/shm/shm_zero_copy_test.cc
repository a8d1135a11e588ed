// Zero-copy gets over shared memory (docs/shm.md, "Zero-copy gets"): a real Store copying its put
// payloads into the server's payload arenas, a Service, a ShmServer and RemoteStores over
// ConnectShm, all in this process.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "transport/shm/shm_served_store.h"

namespace wombatkv::testing {
namespace {

constexpr uint64_t kWaitMicros = 20'000'000;
constexpr size_t kWorkers = 2;
constexpr uint64_t kArenaBytes = 16 << 20;

class ZeroCopyGets : public ServedShmStore {
 protected:
  void SetUp() override {
    // Puts of twice the arena evict all that is not held.
    Serve({"zc", kArenaBytes, 4 << 20, 16 << 20, kWorkers,
           [](StoreOptions& o) { o.cache_bytes_max = kArenaBytes / 2; }});
  }

  TestChain Save(std::string_view ns, size_t blocks, size_t bytes, uint64_t salt = 0) {
    TestChain c = MakeChain(blocks, bytes, salt);
    auto puts = c.Puts();
    auto v = store_->SaveChain(ns, fp_, puts);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return c;
  }

  Fingerprint fp_ = Fp(3);
};

// The line of /proc/self/maps of the mapping holding `p`.
std::string MappingOf(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream in(line);
    in >> std::hex >> lo >> dash >> hi;
    if (at >= lo && at < hi) return line;
  }
  return "";
}

TEST_F(ZeroCopyGets, ALargePayloadIsPassedByReferenceAndHeldUntilTheBorrowGoes) {
  TestChain c = Save("tenant", 2, 256 << 10);
  auto client = Client();
  ASSERT_TRUE(client);
  uint64_t doorbells = 0;
  {
    auto got = client->GetBlocks("tenant", fp_, c.keys);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      ASSERT_EQ(got->payload(i).size(), c.payloads[i].size());
      EXPECT_EQ(0, std::memcmp(got->payload(i).data(), c.payloads[i].data(),
                               c.payloads[i].size()));
      // In the client's read-only mapping of the tenant's arena, not in its response area.
      const std::string map = MappingOf(got->payload(i).data());
      EXPECT_NE(map.find("wombatkv-arena-" + std::to_string(arenas_->ArenaOf("tenant"))),
                std::string::npos)
          << map;
      EXPECT_NE(map.find(" r--s "), std::string::npos) << map;
    }
    const ShmServerStats s = server_->Stats();
    EXPECT_EQ(s.shared_payloads, 2u);
    EXPECT_EQ(s.shared_payloads_live, 2u) << "the daemon must hold what the client borrows";
    EXPECT_EQ(s.shared_bytes_live, 2u * (256 << 10));
    EXPECT_EQ(s.response_regions_live, 0u) << "the payloads were copied";
    EXPECT_EQ(s.arena_grants, 1u);
    // Every worker asleep: the release must wake one (no further call comes to do it).
    ASSERT_TRUE(server_->WaitFor(
        [](const ShmServerStats& s) { return s.workers_idle == kWorkers; }, kWaitMicros));
    doorbells = server_->Stats().doorbells;
  }
  // Released with the borrow; a worker lets go before it sleeps again.
  EXPECT_TRUE(server_->WaitFor(
      [](const ShmServerStats& s) { return s.shared_payloads_live == 0; }, kWaitMicros));
  EXPECT_EQ(server_->Stats().shared_bytes_live, 0u);
  EXPECT_EQ(server_->Stats().doorbells, doorbells) << "a release rang as if a request waited";
  // A second get needs no second grant.
  ASSERT_TRUE(client->GetBlocks("tenant", fp_, c.keys).ok());
  EXPECT_EQ(server_->Stats().arena_grants, 1u);
}

TEST_F(ZeroCopyGets, ASmallPayloadIsCopiedIntoTheResponseArea) {
  TestChain c = Save("tenant", 1, 1024);
  auto client = Client();
  ASSERT_TRUE(client);
  auto got = client->GetBlocks("tenant", fp_, c.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(0, std::memcmp(got->payload(0).data(), c.payloads[0].data(), 1024));
  EXPECT_EQ(server_->Stats().shared_payloads, 0u);
  EXPECT_EQ(server_->Stats().response_regions_live, 1u);
}

// Isolation: the same bytes put in two namespaces live in two arenas, and a client reading one
// namespace is handed that namespace's arena only.
TEST_F(ZeroCopyGets, AClientIsHandedOnlyTheArenaOfTheNamespaceItReads) {
  TestChain a = Save("alpha", 1, 128 << 10, /*salt=*/5);
  TestChain b = Save("beta", 1, 128 << 10, /*salt=*/5);
  ASSERT_EQ(a.payloads, b.payloads);
  auto client = Client();
  ASSERT_TRUE(client);
  auto got = client->GetBlocks("beta", fp_, b.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const uint32_t beta = arenas_->ArenaOf("beta"), alpha = arenas_->ArenaOf("alpha");
  ASSERT_NE(beta, alpha);
  const std::string map = MappingOf(got->payload(0).data());
  EXPECT_NE(map.find("wombatkv-arena-" + std::to_string(beta) + " "), std::string::npos) << map;
  EXPECT_EQ(server_->Stats().arena_grants, 1u) << "alpha's arena was handed over too";
}

// A borrow outlives its channel: the daemon keeps holding its payloads (the range is not reused
// by later puts, however much the cache evicts) until the borrow dies, then lets them go.
TEST_F(ZeroCopyGets, ABorrowThatOutlivesItsChannelKeepsItsBytesAndIsThenLetGo) {
  TestChain c = Save("tenant", 3, 64 << 10);
  auto client = Client();
  ASSERT_TRUE(client);
  auto got = client->GetBlocks("tenant", fp_, c.keys);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(server_->Stats().shared_payloads_live, 3u);
  client.reset();  // the channel goes; the borrow (and the arena mapping) stay
  // Twice the arena (four times the cache) in new payloads: every range the daemon does not
  // hold is evicted from the cache and reused.
  for (uint64_t salt = 1; salt <= 4; ++salt) Save("tenant", 16, 512 << 10, salt);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(0, std::memcmp(got->payload(i).data(), c.payloads[i].data(), 64 << 10))
        << "block " << i << " of a live borrow changed";
  }
  EXPECT_EQ(server_->Stats().shared_payloads_live, 3u);
  got = Status::NotFound("released");  // the last borrow: the daemon sees the hang-up now
  EXPECT_TRUE(server_->WaitFor(
      [](const ShmServerStats& s) { return s.clients == 0 && s.shared_payloads_live == 0; },
      kWaitMicros));
}

}  // namespace
}  // namespace wombatkv::testing
