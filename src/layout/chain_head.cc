#include "layout/chain_head.h"

#include <cstring>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/endian.h"
#include "base/limits.h"

namespace wombatkv::layout {
namespace {
constexpr char kMagic[4] = {'W', 'K', 'H', '1'};
constexpr uint8_t kFormatVersion = 1;
constexpr size_t kFixedBytes = 72;
constexpr size_t kEntryBytes = 56;
}  // namespace

size_t ChainHeadBytes(size_t ns_bytes, size_t entries) {
  return kFixedBytes + ns_bytes + kEntryBytes * entries + 4;
}

std::string EncodeChainHead(const ChainHead& head) {
  WMBT_CHECK(!head.entries.empty() && head.entries.size() <= limits::kChainBlocksMax);
  WMBT_CHECK(head.ns.size() <= limits::kNamespaceBytesMax);
  const size_t n = ChainHeadBytes(head.ns.size(), head.entries.size());
  std::string out(n, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, kMagic, 4);
  p[4] = kFormatVersion;
  p[5] = 0;
  StoreLe16(p + 6, static_cast<uint16_t>(head.ns.size()));
  std::memcpy(p + 8, head.fp.data(), Fingerprint::kSize);
  std::memcpy(p + 20, head.chain_id.data(), ChainId::kSize);
  StoreLe64(p + 52, head.version);
  StoreLe64(p + 60, head.published_us);
  StoreLe32(p + 68, static_cast<uint32_t>(head.entries.size()));
  std::memcpy(p + kFixedBytes, head.ns.data(), head.ns.size());
  uint8_t* e = p + kFixedBytes + head.ns.size();
  for (const ChainEntry& entry : head.entries) {
    std::memcpy(e, entry.key.data(), BlockKey::kSize);
    std::memcpy(e + 32, entry.hash.data(), ContentHash::kSize);
    StoreLe32(e + 52, entry.length);
    e += kEntryBytes;
  }
  StoreLe32(p + n - 4, Crc32c(p, n - 4));
  return out;
}

Result<ChainHead> DecodeChainHead(ByteView bytes, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption("chain head " + std::string(what) + ": " + why);
  };
  const uint8_t* p = bytes.data();
  const size_t n = bytes.size();
  if (n < kFixedBytes + 4) return bad("too short (" + std::to_string(n) + " bytes)");
  if (std::memcmp(p, kMagic, 4) != 0) return bad("bad magic");
  if (LoadLe32(p + n - 4) != Crc32c(p, n - 4)) return bad("CRC32C mismatch");
  if (p[4] != kFormatVersion) return bad("unsupported version " + std::to_string(p[4]));
  if (p[5] != 0) return bad("unknown flags " + std::to_string(p[5]));
  const size_t ns_len = LoadLe16(p + 6);
  const uint64_t count = LoadLe32(p + 68);
  if (ns_len == 0 || ns_len > limits::kNamespaceBytesMax) return bad("bad namespace length");
  if (count == 0 || count > limits::kChainBlocksMax) return bad("bad entry count");
  if (n != kFixedBytes + ns_len + kEntryBytes * count + 4) return bad("length does not match");
  ChainHead head;
  head.ns.assign(reinterpret_cast<const char*>(p + kFixedBytes), ns_len);
  if (!ValidateNamespace(head.ns).ok()) return bad("invalid namespace");
  head.fp = Fingerprint::FromBytes({p + 8, Fingerprint::kSize});
  head.chain_id = ChainId::FromBytes({p + 20, ChainId::kSize});
  head.version = LoadLe64(p + 52);
  head.published_us = LoadLe64(p + 60);
  head.entries.resize(count);
  const uint8_t* e = p + kFixedBytes + ns_len;
  for (auto& entry : head.entries) {
    entry.key = BlockKey::FromBytes({e, BlockKey::kSize});
    entry.hash = ContentHash::FromBytes({e + 32, ContentHash::kSize});
    entry.length = LoadLe32(e + 52);
    if (entry.length > limits::kBlockBytesMax) return bad("entry length over the block limit");
    if (entry.key.IsZero()) return bad("entry with the zero key");
    e += kEntryBytes;
  }
  return head;
}

}  // namespace wombatkv::layout
