#include "store/put_copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <string>

namespace wombatkv {
namespace {

// 12 blocks of 256 KiB (enough to split), every third handed over (zero-copy).
struct Blocks {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<BlockPut> puts;
  Blocks() {
    for (int i = 0; i < 12; ++i) {
      bytes.emplace_back(256 << 10, uint8_t(i));
      bytes.back()[i] = 0xff;
    }
    for (int i = 0; i < 12; ++i) {
      BlockPut p;
      p.payload = bytes[i];
      if (i % 3 == 2) {
        auto b = Buffer::CopyOf(bytes[i]);
        p.owned = BufferSlice{b, b->data(), b->size()};
      }
      puts.push_back(p);
    }
  }
};

void ExpectCopiesOf(const Blocks& in, const CopiedBlocks& out) {
  ASSERT_EQ(out.payloads.size(), in.puts.size());
  for (size_t i = 0; i < in.puts.size(); ++i) {
    EXPECT_EQ(out.hashes[i], HashPayload(in.bytes[i])) << "block " << i;
    ASSERT_EQ(out.payloads[i].size, in.bytes[i].size());
    EXPECT_EQ(0, std::memcmp(out.payloads[i].data, in.bytes[i].data(), in.bytes[i].size()));
    if (in.puts[i].owned.owner) {
      EXPECT_EQ(out.payloads[i].data, in.puts[i].owned.data) << "a handed-over block was copied";
    } else {
      EXPECT_NE(out.payloads[i].data, in.bytes[i].data()) << "the caller's bytes were kept";
    }
  }
}

TEST(CopyAndHashBlocks, SharedWithARunningHelperGivesWhatOneThreadGives) {
  auto pool = BufferPool::Create(64 << 20);
  auto helper = NewThreadPoolExecutor(1, "test-copy");
  // Until the helper has taken part (it may be slow to wake on a loaded machine).
  size_t helped = 0;
  for (int round = 0; round < 200 && helped < 20; ++round) {
    Blocks in;
    CopiedBlocks out = CopyAndHashBlocks(in.puts, CopyTarget{pool}, helper.get());
    ExpectCopiesOf(in, out);
    helped += out.helped;
  }
  EXPECT_GT(helped, 0u) << "the helper never took a block";
  Blocks alone;
  ExpectCopiesOf(alone, CopyAndHashBlocks(alone.puts, CopyTarget{pool}, nullptr));
}

TEST(CopyAndHashBlocks, NeverWaitsForAHelperThatHasNotStarted) {
  // An inline executor runs the helper's task only when drained: the caller must do every block
  // itself and return; the late helper then finds nothing left (and touches no freed input).
  auto pool = BufferPool::Create(64 << 20);
  auto never = NewInlineExecutor();
  {
    Blocks in;
    ExpectCopiesOf(in, CopyAndHashBlocks(in.puts, CopyTarget{pool}, never.get()));
  }
  never->Drain();
}

// Hands out buffers for namespace "tenant" until `left` runs out, recording what it was asked.
class CountingAllocator : public PayloadAllocator {
 public:
  explicit CountingAllocator(int left) : left_(left) {}
  std::shared_ptr<Buffer> Allocate(std::string_view ns, size_t bytes) override {
    std::lock_guard<std::mutex> g(mu_);
    asked_ns.emplace_back(ns);
    if (left_ == 0) return nullptr;
    left_--;
    auto b = Buffer::Allocate(bytes);
    given.push_back(b->data());
    return b;
  }
  std::vector<std::string> asked_ns;
  std::vector<const uint8_t*> given;

 private:
  std::mutex mu_;
  int left_;
};

TEST(CopyAndHashBlocks, CopiesGoToTheSharedAllocatorFirstAndToThePoolWhenItHasNone) {
  auto pool = BufferPool::Create(64 << 20);
  CountingAllocator shared(3);
  Blocks in;
  CopiedBlocks out = CopyAndHashBlocks(in.puts, CopyTarget{pool, &shared, "tenant"}, nullptr);
  ExpectCopiesOf(in, out);
  ASSERT_EQ(shared.asked_ns.size(), 8u);  // the 8 copied blocks; handed-over ones are kept
  for (const std::string& ns : shared.asked_ns) EXPECT_EQ(ns, "tenant");
  size_t from_shared = 0;
  for (const BufferSlice& p : out.payloads) {
    for (const uint8_t* g : shared.given) from_shared += p.data == g;
  }
  EXPECT_EQ(from_shared, 3u) << "the allocator's buffers were not used";
}

}  // namespace
}  // namespace wombatkv
