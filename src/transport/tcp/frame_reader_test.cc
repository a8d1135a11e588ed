#include "transport/tcp/frame_reader.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/endian.h"

namespace wombatkv::tcp {
namespace {

// Both ends of a local stream socket, closed on destruction.
struct SocketPair {
  int a = -1, b = -1;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    a = fds[0];
    b = fds[1];
  }
  ~SocketPair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
  void Write(const std::vector<uint8_t>& bytes) {
    ASSERT_EQ(::write(a, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
};

std::vector<uint8_t> Bytes(const wire::Message& m) {
  auto f = wire::Frame(m);
  EXPECT_TRUE(f.ok());
  std::vector<uint8_t> out;
  for (const iovec& v : f->iov()) {
    auto* p = static_cast<const uint8_t*>(v.iov_base);
    out.insert(out.end(), p, p + v.iov_len);
  }
  return out;
}

wire::Message Sample(uint64_t id, size_t payload_bytes) {
  wire::Message m;
  m.id = id;
  m.op = 5;
  m.fields = {1, 2, 3};
  auto b = Buffer::Allocate(payload_bytes);
  for (size_t i = 0; i < payload_bytes; ++i) b->data()[i] = static_cast<uint8_t>(i * 7 + id);
  m.payloads = {BufferSlice{b, b->data(), b->size()}};
  return m;
}

// Reads until the socket has nothing more and returns every message parsed.
std::vector<wire::Message> Drain(FrameReader& r, int fd, Status* error = nullptr) {
  std::vector<wire::Message> out;
  for (;;) {
    auto rr = r.ReadFrom(fd);
    EXPECT_TRUE(rr.ok());
    for (;;) {
      auto m = r.Next();
      if (!m.ok()) {
        if (error) *error = m.status();
        return out;
      }
      if (!m->has_value()) break;
      out.push_back(std::move(**m));
    }
    if (*rr != FrameReader::ReadResult::kData) return out;
  }
}

// A frame within the limit but beyond the memory the process may have (here an address-space
// limit, as under strict overcommit) is refused as that frame's error, not a crash.
TEST(FrameReaderDeathTest, ABodyThereIsNoMemoryForIsRefusedAndTheProcessLivesOn) {
  EXPECT_EXIT(
      {
        rlimit lim{};
        ::getrlimit(RLIMIT_AS, &lim);
        // Far below the 1 GiB body; enough for what the process has mapped already.
        lim.rlim_cur = 768u << 20;
        if (::setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(3);
        SocketPair p;
        uint8_t env[wire::kEnvelopeBytes];
        wire::EncodeEnvelope(1u << 30, 0, env);
        p.Write(std::vector<uint8_t>(env, env + sizeof env));
        FrameReader r(1u << 30);
        Status error;
        Drain(r, p.b, &error);
        std::_Exit(error.code() == Code::kResourceExhausted &&
                           error.message().find("no memory for a frame body of 1073741824") !=
                               std::string::npos
                       ? 0
                       : 4);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(FrameReader, ManyPipelinedFramesArriveFromFewReads) {
  SocketPair s;
  std::vector<uint8_t> all;
  for (uint64_t id = 1; id <= 50; ++id) {
    auto b = Bytes(Sample(id, 100));
    all.insert(all.end(), b.begin(), b.end());
  }
  s.Write(all);
  FrameReader r(1 << 20);
  auto got = Drain(r, s.b);
  ASSERT_EQ(got.size(), 50u);
  for (uint64_t id = 1; id <= 50; ++id) {
    EXPECT_EQ(got[id - 1].id, id);
    EXPECT_EQ(got[id - 1].payloads[0].data[3], static_cast<uint8_t>(3 * 7 + id));
  }
  EXPECT_FALSE(r.mid_frame());
}

TEST(FrameReader, AFrameSplitAtEveryByteBoundaryIsReassembled) {
  auto bytes = Bytes(Sample(9, 300));
  for (size_t cut = 1; cut < bytes.size(); cut += 7) {
    SocketPair s;
    FrameReader r(1 << 20);
    s.Write({bytes.begin(), bytes.begin() + cut});
    EXPECT_TRUE(Drain(r, s.b).empty()) << cut;
    EXPECT_TRUE(r.mid_frame());
    s.Write({bytes.begin() + cut, bytes.end()});
    auto got = Drain(r, s.b);
    ASSERT_EQ(got.size(), 1u) << cut;
    EXPECT_EQ(got[0].id, 9u);
    EXPECT_EQ(got[0].payloads[0].size, 300u);
  }
}

TEST(FrameReader, LargeBodyLandsInOneBufferThatPayloadsSlice) {
  SocketPair s;
  auto bytes = Bytes(Sample(3, 3 << 20));
  FrameReader r(64 << 20);
  std::vector<wire::Message> got;
  size_t at = 0;
  while (got.empty()) {  // the socket holds less than the frame: feed it in pieces
    if (at < bytes.size()) {
      ssize_t n = ::write(s.a, bytes.data() + at, bytes.size() - at);
      if (n > 0) at += static_cast<size_t>(n);
    }
    auto more = Drain(r, s.b);
    for (auto& m : more) got.push_back(std::move(m));
  }
  ASSERT_EQ(got.size(), 1u);
  const auto& p = got[0].payloads[0];
  ASSERT_EQ(p.size, 3u << 20);
  EXPECT_EQ(p.data[12345], static_cast<uint8_t>(12345 * 7 + 3));
  EXPECT_GE(p.data, p.owner->data());
  EXPECT_LE(p.data + p.size, p.owner->data() + p.owner->size()) << "a slice of the body";
}

// Feeds `bytes` through the socket pair in pieces until `r` yields one message.
wire::Message ReadOne(FrameReader& r, SocketPair& s, const std::vector<uint8_t>& bytes) {
  std::vector<wire::Message> got;
  size_t at = 0;
  while (got.empty()) {
    if (at < bytes.size()) {
      ssize_t n = ::write(s.a, bytes.data() + at, bytes.size() - at);
      if (n > 0) at += static_cast<size_t>(n);
    }
    for (auto& m : Drain(r, s.b)) got.push_back(std::move(m));
  }
  EXPECT_EQ(got.size(), 1u);
  return std::move(got[0]);
}

// Invariant 5: a large body is reused for the next one of its size only once nobody holds it;
// a body still held (a caller's Borrow) is never written over.
TEST(FrameReader, RecyclesALargeBodyOnlyOnceItsHolderLetGo) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "NOT RUN: FrameReader recycles nothing under ThreadSanitizer (frame_reader.cc)";
#endif
  SocketPair s;
  FrameReader r(64 << 20, 16 << 10, /*recycle_bytes_max=*/64 << 20);
  const size_t size = 2 << 20;
  wire::Message first = ReadOne(r, s, Bytes(Sample(1, size)));
  const Buffer* first_body = first.payloads[0].owner.get();

  // Held: the next body of the same size gets memory of its own, and the first is intact.
  wire::Message second = ReadOne(r, s, Bytes(Sample(2, size)));
  EXPECT_NE(second.payloads[0].owner.get(), first_body);
  for (size_t i : {size_t{0}, size_t{12345}, size - 1}) {
    EXPECT_EQ(first.payloads[0].data[i], static_cast<uint8_t>(i * 7 + 1)) << i;
    EXPECT_EQ(second.payloads[0].data[i], static_cast<uint8_t>(i * 7 + 2)) << i;
  }

  // Released: the reader's spare (the second body) is reused for the third.
  const Buffer* second_body = second.payloads[0].owner.get();
  first = wire::Message();
  second = wire::Message();
  wire::Message third = ReadOne(r, s, Bytes(Sample(3, size)));
  EXPECT_EQ(third.payloads[0].owner.get(), second_body) << "the released body was reused";
  EXPECT_EQ(third.payloads[0].data[12345], static_cast<uint8_t>(12345 * 7 + 3));

  // Another size: fresh memory (the spare is kept for one size only).
  wire::Message other = ReadOne(r, s, Bytes(Sample(4, size + 1)));
  EXPECT_NE(other.payloads[0].owner.get(), third.payloads[0].owner.get());
  EXPECT_EQ(other.payloads[0].data[size], static_cast<uint8_t>(size * 7 + 4));
}

// Invariant 5 for small bodies (a 4 KiB get): reused once released, never while held, and kept
// in a slot of their own, so small and large responses in turn both keep their memory. (Weak
// references, not addresses: malloc may hand a freed Buffer's address to a new one.)
TEST(FrameReader, RecyclesSmallAndLargeBodiesInSlotsOfTheirOwn) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "NOT RUN: FrameReader recycles nothing under ThreadSanitizer (frame_reader.cc)";
#endif
  SocketPair s;
  FrameReader r(64 << 20, 16 << 10, /*recycle_bytes_max=*/64 << 20);
  const size_t small = 4 << 10, large = 2 << 20;
  wire::Message a = ReadOne(r, s, Bytes(Sample(1, small)));
  wire::Message held = ReadOne(r, s, Bytes(Sample(2, small)));
  EXPECT_NE(held.payloads[0].owner, a.payloads[0].owner) << "a held body was written over";
  EXPECT_EQ(a.payloads[0].data[small - 1], static_cast<uint8_t>((small - 1) * 7 + 1));
  std::weak_ptr<const Buffer> small_body = held.payloads[0].owner;
  a = wire::Message();
  held = wire::Message();

  wire::Message big = ReadOne(r, s, Bytes(Sample(3, large)));
  std::weak_ptr<const Buffer> large_body = big.payloads[0].owner;
  big = wire::Message();
  wire::Message b = ReadOne(r, s, Bytes(Sample(4, small)));
  EXPECT_EQ(b.payloads[0].owner, small_body.lock()) << "the small body did not outlive a large one";
  EXPECT_EQ(b.payloads[0].data[small - 1], static_cast<uint8_t>((small - 1) * 7 + 4));
  b = wire::Message();
  big = ReadOne(r, s, Bytes(Sample(5, large)));
  EXPECT_EQ(big.payloads[0].owner, large_body.lock()) << "the large body did not outlive a small one";
}

TEST(FrameReader, OversizedLengthIsRefusedFromTheEnvelopeAlone) {
  SocketPair s;
  uint8_t env[wire::kEnvelopeBytes];
  wire::EncodeEnvelope(0xF0000000u, 0, env);  // ~4 GB announced, nothing behind it
  s.Write({env, env + sizeof env});
  FrameReader r(1 << 20);
  Status error;
  EXPECT_TRUE(Drain(r, s.b, &error).empty());
  EXPECT_EQ(error.code(), Code::kInvalidArgument);
  EXPECT_NE(error.message().find("exceeds the limit 1048576"), std::string::npos) << error.message();
}

// A bad magic or CRC names no request: with a CRC mismatch the id itself may be the damaged
// bytes, and an error answered to it could reach another call (from a review, session 57).
TEST(FrameReader, BadMagicAndBadCrcAreErrorsOfTheConnection) {
  {
    SocketPair s;
    auto bytes = Bytes(Sample(1, 10));
    bytes[0] = 'X';
    s.Write(bytes);
    FrameReader r(1 << 20);
    Status error;
    Drain(r, s.b, &error);
    EXPECT_NE(error.message().find("bad magic"), std::string::npos) << error.ToString();
    EXPECT_EQ(r.rejected_id(), 0u);
  }
  {
    SocketPair s;
    auto bytes = Bytes(Sample(77, 10));
    bytes.back() ^= 1;  // a payload bit flipped in transit
    s.Write(bytes);
    FrameReader r(1 << 20);
    Status error;
    Drain(r, s.b, &error);
    EXPECT_EQ(error.code(), Code::kCorruption) << error.ToString();
    EXPECT_EQ(r.rejected_id(), 0u);
    EXPECT_EQ(r.rejected_op(), 0u);
  }
}

TEST(FrameReader, EndOfStreamIsReported) {
  SocketPair s;
  ::close(s.a);
  s.a = -1;
  FrameReader r(1024);
  auto rr = r.ReadFrom(s.b);
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(*rr, FrameReader::ReadResult::kEof);
}

}  // namespace
}  // namespace wombatkv::tcp

namespace wombatkv::tcp {
namespace {

// drained() lets the event loop skip the read that would only return EAGAIN: it must be true
// only when the socket really had nothing more.
TEST(FrameReader, AShortReadSaysTheSocketIsDrainedAFullOneDoesNot) {
  SocketPair s;
  FrameReader r(1 << 20, /*staging_bytes=*/4096);
  s.Write(Bytes(Sample(1, 100)));
  auto rr = r.ReadFrom(s.b);
  ASSERT_TRUE(rr.ok());
  ASSERT_EQ(*rr, FrameReader::ReadResult::kData);
  EXPECT_TRUE(r.drained()) << "one small frame: the read took everything";
  auto m = r.Next();
  ASSERT_TRUE(m.ok() && m->has_value());

  // More than the staging buffer holds: the first read fills it, so more may be waiting.
  s.Write(Bytes(Sample(2, 3000)));
  s.Write(Bytes(Sample(3, 3000)));
  rr = r.ReadFrom(s.b);
  ASSERT_TRUE(rr.ok());
  EXPECT_FALSE(r.drained()) << "the read filled its room: the socket may hold more";
  size_t got = 0;
  for (int i = 0; i < 100 && got < 2; ++i) {
    for (;;) {
      auto next = r.Next();
      ASSERT_TRUE(next.ok());
      if (!next->has_value()) break;
      ++got;
    }
    if (got < 2) {
      ASSERT_TRUE(r.ReadFrom(s.b).ok());
    }
  }
  EXPECT_EQ(got, 2u);
  EXPECT_TRUE(r.drained()) << "the last read emptied the socket";
}

// MSG_DONTWAIT makes one read of a blocking socket a poll: the client's spin relies on it.
TEST(FrameReader, ADontWaitReadOfAnEmptyBlockingSocketWouldBlock) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);  // blocking
  FrameReader r(1 << 20);
  auto rr = r.ReadFrom(fds[1], MSG_DONTWAIT);
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(*rr, FrameReader::ReadResult::kWouldBlock);
  ::close(fds[0]);
  ::close(fds[1]);
}

// ---- Invariant 6: payloads received into the caller's buffers.

// A message whose payload i holds `sizes[i]` bytes, byte j being i * 31 + j * 7 + id.
wire::Message WithPayloads(uint64_t id, const std::vector<size_t>& sizes) {
  wire::Message m;
  m.id = id;
  m.op = 6;
  m.fields = {1, 2, 3};
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto b = Buffer::Allocate(sizes[i]);
    for (size_t j = 0; j < sizes[i]; ++j) b->data()[j] = static_cast<uint8_t>(i * 31 + j * 7 + id);
    m.payloads.push_back(BufferSlice{b, b->data(), b->size()});
  }
  return m;
}

// Buffers offered to a FrameReader for the message `id` only, and what it was asked.
struct Placement {
  uint64_t id = 0;
  std::vector<std::vector<uint8_t>> memory;
  std::vector<std::span<uint8_t>> buffers;
  int asked = 0;
  std::vector<uint64_t> lengths;

  // Buffers of `rooms[i]` bytes each, zeroed.
  Placement(uint64_t for_id, const std::vector<size_t>& rooms) : id(for_id) {
    for (size_t room : rooms) memory.emplace_back(room, 0);
    for (auto& m : memory) buffers.emplace_back(m.data(), m.size());
  }
  void Install(FrameReader& r) {
    r.set_payload_placer([this](uint64_t got, std::span<const uint64_t> lens) {
      ++asked;
      lengths.assign(lens.begin(), lens.end());
      return got == id ? std::span<const std::span<uint8_t>>(buffers)
                       : std::span<const std::span<uint8_t>>();
    });
  }
  bool Untouched() const {
    for (const auto& m : memory) {
      for (uint8_t b : m) {
        if (b != 0) return false;
      }
    }
    return true;
  }
};

// True when `m`'s payloads are those of WithPayloads(m.id, sizes).
bool HoldsPayloads(const wire::Message& m, const std::vector<size_t>& sizes) {
  if (m.payloads.size() != sizes.size()) return false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (m.payloads[i].size != sizes[i]) return false;
    for (size_t j = 0; j < sizes[i]; ++j) {
      if (m.payloads[i].data[j] != static_cast<uint8_t>(i * 31 + j * 7 + m.id)) return false;
    }
  }
  return true;
}

TEST(FrameReader, PayloadsArePlacedInTheCallersBuffersWhereverTheFrameIsCut) {
  const std::vector<size_t> sizes = {5, 0, 40000, 70000};
  const auto bytes = Bytes(WithPayloads(42, sizes));
  const size_t head = wire::kEnvelopeBytes + wire::kBodyFixedBytes + 8 * sizes.size() + 3;
  for (size_t cut : {size_t{1}, size_t{16}, size_t{30}, head - 1, head, head + 3, head + 5000,
                     bytes.size() - 1, bytes.size()}) {
    SocketPair s;
    FrameReader r(1 << 20, 16 << 10);  // the client's staging size
    Placement place(42, {8, 0, 40000, 80000});
    place.Install(r);
    s.Write({bytes.begin(), bytes.begin() + cut});
    auto first = Drain(r, s.b);
    wire::Message m =
        first.empty() ? ReadOne(r, s, {bytes.begin() + cut, bytes.end()}) : std::move(first[0]);
    EXPECT_EQ(m.id, 42u) << cut;
    EXPECT_EQ(m.fields, (std::vector<uint8_t>{1, 2, 3})) << cut;
    EXPECT_TRUE(HoldsPayloads(m, sizes)) << cut;
    EXPECT_EQ(place.asked, 1) << cut;
    EXPECT_EQ(place.lengths, (std::vector<uint64_t>{5, 0, 40000, 70000})) << cut;
    for (size_t i : {0, 2, 3}) {
      EXPECT_EQ(m.payloads[i].data, place.buffers[i].data()) << "payload " << i << ", cut " << cut;
      EXPECT_EQ(m.payloads[i].owner, nullptr) << "a placed payload owns nothing";
    }
    EXPECT_FALSE(r.mid_frame());
  }
}

TEST(FrameReader, ManyPayloadsArePlacedAcrossDirectReadsOfManyBuffersEach) {
  const std::vector<size_t> sizes(200, 1000);  // more buffers than one recvmsg takes (64)
  SocketPair s;
  FrameReader r(1 << 20, 16 << 10);
  Placement place(5, sizes);
  place.Install(r);
  wire::Message m = ReadOne(r, s, Bytes(WithPayloads(5, sizes)));
  EXPECT_TRUE(HoldsPayloads(m, sizes));
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(m.payloads[i].data, place.buffers[i].data()) << i;
  }
}

TEST(FrameReader, AHeadLargerThanStagingIsNeverPlaced) {
  const std::vector<size_t> sizes(3000, 2);  // a 24 KB length table; staging holds 16 KiB
  SocketPair s;
  FrameReader r(1 << 20, 16 << 10);
  Placement place(6, sizes);
  place.Install(r);
  wire::Message m = ReadOne(r, s, Bytes(WithPayloads(6, sizes)));
  EXPECT_TRUE(HoldsPayloads(m, sizes));
  EXPECT_EQ(place.asked, 0);
  EXPECT_NE(m.payloads[0].owner, nullptr) << "a slice of the body";
  EXPECT_TRUE(place.Untouched());
}

TEST(FrameReader, WithoutRoomForEveryPayloadOrWithoutBuffersTheBodyIsReceivedAsUsual) {
  const std::vector<size_t> sizes = {100, 30000};
  for (const std::vector<size_t>& rooms : {std::vector<size_t>{100, 29999},  // one too small
                                           std::vector<size_t>{100},         // one missing
                                           std::vector<size_t>{}}) {         // none offered
    SocketPair s;
    FrameReader r(1 << 20, 16 << 10);
    Placement place(8, rooms);
    place.Install(r);
    wire::Message m = ReadOne(r, s, Bytes(WithPayloads(8, sizes)));
    EXPECT_TRUE(HoldsPayloads(m, sizes)) << rooms.size();
    for (const BufferSlice& p : m.payloads) EXPECT_NE(p.owner, nullptr) << "a slice of the body";
    EXPECT_TRUE(place.Untouched()) << rooms.size();
  }
}

TEST(FrameReader, FramesPipelinedAroundAPlacedOneArriveWholeAndInOrder) {
  SocketPair s;
  std::vector<uint8_t> bytes;
  for (uint64_t id : {1, 2, 3}) {
    auto b = Bytes(WithPayloads(id, {3000, 20}));
    bytes.insert(bytes.end(), b.begin(), b.end());
  }
  s.Write(bytes);
  FrameReader r(1 << 20, 16 << 10);
  Placement place(2, {3000, 20});
  place.Install(r);
  auto got = Drain(r, s.b);
  ASSERT_EQ(got.size(), 3u);
  for (uint64_t id : {1, 2, 3}) {
    EXPECT_EQ(got[id - 1].id, id);
    EXPECT_TRUE(HoldsPayloads(got[id - 1], {3000, 20})) << id;
  }
  EXPECT_EQ(got[1].payloads[0].data, place.buffers[0].data());
  EXPECT_NE(got[0].payloads[0].data, place.buffers[0].data());
  EXPECT_EQ(place.asked, 3);
}

TEST(FrameReader, APlacedBodyWithABadCrcIsCorruptionOfTheConnection) {
  SocketPair s;
  auto bytes = Bytes(WithPayloads(77, {10, 20}));
  bytes.back() ^= 1;  // a bit of the last payload flipped in transit
  s.Write(bytes);
  FrameReader r(1 << 20, 16 << 10);
  Placement place(77, {10, 20});
  place.Install(r);
  Status error;
  EXPECT_TRUE(Drain(r, s.b, &error).empty());
  EXPECT_EQ(error.code(), Code::kCorruption) << error.ToString();
  EXPECT_EQ(r.rejected_id(), 0u);
  EXPECT_EQ(r.rejected_op(), 0u);
}

}  // namespace
}  // namespace wombatkv::tcp
