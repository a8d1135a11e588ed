#include "wombatkv/buffer.h"

#include <gtest/gtest.h>

#include <thread>

namespace wombatkv {
namespace {

TEST(Buffer, AdoptRunsTheReleaseOnceWhenTheLastReferenceGoes) {
  uint8_t bytes[16] = {1, 2, 3};
  int released = 0;
  auto b = Buffer::Adopt(bytes, sizeof bytes, [&] { released++; });
  EXPECT_EQ(b->data(), bytes);
  EXPECT_EQ(b->size(), sizeof bytes);
  BufferSlice slice{b, b->data() + 1, 2};
  b.reset();
  EXPECT_EQ(released, 0);  // the slice still holds it
  EXPECT_EQ(slice.view()[0], 2);
  std::thread([s = std::move(slice)]() mutable { s = BufferSlice{}; }).join();
  EXPECT_EQ(released, 1);
}

TEST(Buffer, AdoptWithoutACallbackNeverFreesForeignMemory) {
  static uint8_t bytes[8];  // free() on it would crash
  Buffer::Adopt(bytes, sizeof bytes, nullptr).reset();
}

TEST(Buffer, AllocatedBuffersStillOwnTheirBytes) {
  auto b = Buffer::CopyOf(AsBytes("abc"));
  EXPECT_EQ(AsChars(b->view()), "abc");
}

}  // namespace
}  // namespace wombatkv
