#include "transport/shm/payload_arenas.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "wombatkv/env.h"

namespace wombatkv::shm {
namespace {

constexpr uint64_t kArenaBytes = 4u << 20;

std::shared_ptr<PayloadArenas> Make(size_t arenas_max = 4) {
  PayloadArenasOptions o;
  o.arena_bytes = kArenaBytes;
  o.arenas_max = arenas_max;
  o.min_payload_bytes = 64 << 10;
  auto a = PayloadArenas::Create(o);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return *a;
}

TEST(PayloadArenas, EachNamespaceGetsItsOwnArenaAndLocateFindsThePayload) {
  auto arenas = Make();
  auto a = arenas->Allocate("alpha", 256 << 10);
  auto b = arenas->Allocate("beta", 256 << 10);
  auto a2 = arenas->Allocate("alpha", 100 << 10);
  ASSERT_TRUE(a && b && a2);
  const uint32_t na = arenas->ArenaOf("alpha"), nb = arenas->ArenaOf("beta");
  EXPECT_NE(na, 0u);
  EXPECT_NE(nb, 0u);
  EXPECT_NE(na, nb);
  EXPECT_EQ(arenas->ArenaOf("gamma"), 0u);
  auto la = arenas->Locate(a->data(), a->size());
  auto la2 = arenas->Locate(a2->data() + 10, 1000);
  auto lb = arenas->Locate(b->data(), b->size());
  ASSERT_TRUE(la && la2 && lb);
  EXPECT_EQ(la->arena, na);
  EXPECT_EQ(la2->arena, na);
  EXPECT_EQ(lb->arena, nb);
  EXPECT_NE(la->offset, la2->offset);
  // Not in an arena, or straddling its end: no answer (Z3).
  std::vector<uint8_t> heap(100);
  EXPECT_FALSE(arenas->Locate(heap.data(), heap.size()));
  EXPECT_FALSE(arenas->Locate(a->data(), kArenaBytes + 1));
  EXPECT_EQ(arenas->Stats().arenas, 2u);
  EXPECT_EQ(arenas->Stats().payloads_live, 3u);
}

TEST(PayloadArenas, ARangeIsReusedOnlyAfterItsBufferIsGone) {
  auto arenas = Make();
  auto first = arenas->Allocate("ns", 1 << 20);
  ASSERT_TRUE(first);
  const uint8_t* at = first->data();
  std::shared_ptr<const Buffer> holder = first;  // e.g. a client's lease
  first.reset();
  auto second = arenas->Allocate("ns", 1 << 20);
  ASSERT_TRUE(second);
  EXPECT_NE(second->data(), at) << "a range still held was handed out again (Z2)";
  holder.reset();
  auto third = arenas->Allocate("ns", 1 << 20);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->data(), at) << "the freed range (low, already faulted in) was not reused";
  second.reset();
  third.reset();
  EXPECT_EQ(arenas->Stats().bytes_live, 0u);
}

TEST(PayloadArenas, DeclinesSmallPayloadsAFullArenaAndNamespacesBeyondTheLimit) {
  auto arenas = Make(/*arenas_max=*/1);
  EXPECT_FALSE(arenas->Allocate("ns", 1024)) << "small payloads copy";
  auto big = arenas->Allocate("ns", kArenaBytes);
  ASSERT_TRUE(big);
  EXPECT_FALSE(arenas->Allocate("ns", 64 << 10)) << "the arena is full";
  EXPECT_FALSE(arenas->Allocate("other", 64 << 10)) << "no arena left for another namespace";
  EXPECT_EQ(arenas->Stats().declined, 3u);
  big.reset();
  EXPECT_TRUE(arenas->Allocate("ns", 64 << 10));
}

// One arena of 64 MiB warmed `warm_ahead_bytes` ahead of its highest allocation.
std::shared_ptr<PayloadArenas> MakeWarmed(uint64_t warm_ahead_bytes) {
  PayloadArenasOptions o;
  o.arena_bytes = 64 << 20;
  o.warm_ahead_bytes = warm_ahead_bytes;
  auto a = PayloadArenas::Create(o);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return *a;
}

TEST(PayloadArenas, PagesAheadOfTheHighestAllocationArePopulatedInTheBackground) {
  auto arenas = MakeWarmed(8 << 20);
  auto p = arenas->Allocate("ns", 1 << 20);
  ASSERT_TRUE(p);
  EXPECT_GE(arenas->Stats().populated_bytes, 1u << 20) << "the allocation itself is populated";
  // The warm thread catches up by itself; bounded by far more than it needs.
  for (int i = 0; i < 2000 && arenas->Stats().populated_bytes < (9u << 20); ++i)
    RealClock()->SleepMicros(10'000);
  EXPECT_EQ(arenas->Stats().populated_bytes, 9u << 20) << "not warmed to 8 MiB ahead";
}

TEST(PayloadArenas, WarmingPagesNeverChangesAPayloadBeingWritten) {
  // Allocations race the warm thread through the arena (it warms the chunk a payload may be
  // copied into at that moment); every payload keeps exactly the bytes written to it.
  auto arenas = MakeWarmed(4 << 20);
  constexpr size_t kBytes = 64 << 10;
  std::vector<std::shared_ptr<Buffer>> kept;
  for (size_t i = 0; i < (64u << 20) / kBytes; ++i) {
    auto b = arenas->Allocate("ns", kBytes);
    ASSERT_TRUE(b) << i;
    std::memset(b->data(), static_cast<int>(1 + i % 255), kBytes);
    kept.push_back(std::move(b));
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const uint8_t want = static_cast<uint8_t>(1 + i % 255);
    const uint8_t* d = kept[i]->data();
    ASSERT_EQ(std::count(d, d + kBytes, want), static_cast<long>(kBytes)) << "payload " << i;
  }
}

TEST(PayloadArenas, BadOptionsAreRefusedNamingTheSetting) {
  PayloadArenasOptions o;
  o.arena_bytes = 3 << 20;
  auto r = PayloadArenas::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("WMBT_KV_SHM_ARENA_BYTES"), std::string::npos);
  o.arena_bytes = 2 << 20;
  o.arenas_max = PayloadArenas::kArenasMax + 1;
  r = PayloadArenas::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("WMBT_KV_SHM_ARENAS"), std::string::npos);
}

// What a client can do with the descriptor it is handed: read, nothing else.
TEST(PayloadArenas, AHandedDescriptorMapsReadOnlyAndCannotChangeAPayload) {
  auto arenas = Make();
  auto p = arenas->Allocate("ns", 64 << 10);
  ASSERT_TRUE(p);
  std::memset(p->data(), 0x5a, p->size());
  const auto loc = arenas->Locate(p->data(), p->size());
  ASSERT_TRUE(loc);
  const int fd = arenas->fd(loc->arena);

  void* rw = ::mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  EXPECT_EQ(rw, MAP_FAILED) << "a writable shared mapping of a sealed arena was allowed";
  if (rw != MAP_FAILED) ::munmap(rw, kArenaBytes);

  void* ro = ::mmap(nullptr, kArenaBytes, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(ro, MAP_FAILED);
  const uint8_t* view = static_cast<const uint8_t*>(ro) + loc->offset;
  EXPECT_EQ(view[0], 0x5a);
  EXPECT_EQ(view[p->size() - 1], 0x5a);
  EXPECT_NE(::mprotect(ro, kArenaBytes, PROT_READ | PROT_WRITE), 0)
      << "a read-only mapping was made writable";
  ::munmap(ro, kArenaBytes);

  const uint8_t byte = 0;
  EXPECT_LT(::pwrite(fd, &byte, 1, static_cast<off_t>(loc->offset)), 0);
  EXPECT_NE(::ftruncate(fd, 0), 0);
  EXPECT_NE(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                        static_cast<off_t>(loc->offset), 4096),
            0);
  // Nor through a fresh descriptor (same user: /proc/self/fd reopens the inode read-write).
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const int again = ::open(path.c_str(), O_RDWR);
  if (again >= 0) {
    void* rw2 = ::mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, again, 0);
    EXPECT_EQ(rw2, MAP_FAILED) << "a reopened descriptor mapped the arena writable";
    if (rw2 != MAP_FAILED) ::munmap(rw2, kArenaBytes);
    EXPECT_LT(::pwrite(again, &byte, 1, static_cast<off_t>(loc->offset)), 0);
    ::close(again);
  }
  EXPECT_EQ(p->data()[0], 0x5a);
  EXPECT_EQ(p->data()[p->size() - 1], 0x5a);
}

}  // namespace
}  // namespace wombatkv::shm
