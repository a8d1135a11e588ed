#include "transport/tcp/payload_crc_memo.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/crc32c.h"

namespace wombatkv::tcp {
namespace {

BufferSlice Whole(const std::shared_ptr<const Buffer>& b) { return {b, b->data(), b->size()}; }

TEST(PayloadCrcMemo, RemembersTheCrcOfALiveBuffersBytes) {
  PayloadCrcMemo memo;
  auto b = Buffer::Allocate(100000);
  for (size_t i = 0; i < b->size(); ++i) b->data()[i] = static_cast<uint8_t>(i * 13);
  const uint32_t want = Crc32c(b->data(), b->size());
  EXPECT_EQ(memo.PayloadCrc(Whole(b)), want);
  EXPECT_EQ(memo.PayloadCrc(Whole(b)), want);
  EXPECT_EQ(memo.hits(), 1u);
  // Another range of the same buffer is another answer.
  BufferSlice part{b, b->data(), 5000};
  EXPECT_EQ(memo.PayloadCrc(part), Crc32c(b->data(), 5000));
  EXPECT_EQ(memo.hits(), 1u);
}

// Invariant 1: new bytes at an address that held an earlier, freed buffer's are checksummed
// anew, never answered from the memo.
TEST(PayloadCrcMemo, ABufferReusingAFreedOnesAddressIsNotTakenForIt) {
  PayloadCrcMemo memo;
  std::vector<uint8_t> memory(70000, 1);
  auto adopt = [&] {
    return std::shared_ptr<const Buffer>(Buffer::Adopt(memory.data(), memory.size(), [] {}));
  };
  auto first = adopt();
  EXPECT_EQ(memo.PayloadCrc(Whole(first)), Crc32c(memory.data(), memory.size()));
  first.reset();  // freed; the same bytes now belong to a new buffer with other contents
  std::fill(memory.begin(), memory.end(), 2);
  auto second = adopt();
  EXPECT_EQ(memo.PayloadCrc(Whole(second)), Crc32c(memory.data(), memory.size()));
  EXPECT_EQ(memo.hits(), 0u);
}

TEST(PayloadCrcMemo, ViewsWithoutAnOwnerAreNeverRemembered) {
  PayloadCrcMemo memo;
  std::vector<uint8_t> bytes(70000, 3);
  BufferSlice view{nullptr, bytes.data(), bytes.size()};
  EXPECT_EQ(memo.PayloadCrc(view), Crc32c(bytes.data(), bytes.size()));
  EXPECT_EQ(memo.size(), 0u);
}

TEST(PayloadCrcMemo, StaysBounded) {
  PayloadCrcMemo memo;
  std::vector<std::shared_ptr<const Buffer>> alive;
  for (size_t i = 0; i < PayloadCrcMemo::kEntriesMax + 10; ++i) {
    alive.push_back(Buffer::Allocate(16));
    memo.PayloadCrc(Whole(alive.back()));
    EXPECT_LE(memo.size(), PayloadCrcMemo::kEntriesMax);
  }
}

}  // namespace
}  // namespace wombatkv::tcp
