#include "store/meta_records.h"

#include <cstring>

#include "base/endian.h"

namespace wombatkv::meta_records {
namespace {

std::string ScopedKey(std::string_view tag, std::string_view ns, const Fingerprint& fp,
                      const BlockKey& id) {
  std::string k;
  k.reserve(1 + ns.size() + 1 + Fingerprint::kSize + BlockKey::kSize);
  k += tag;
  k += ns;
  k += '\0';
  k.append(reinterpret_cast<const char*>(fp.data()), Fingerprint::kSize);
  k.append(reinterpret_cast<const char*>(id.data()), BlockKey::kSize);
  return k;
}

}  // namespace

std::string HeadKey(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id) {
  return ScopedKey(kHeadPrefix, ns, fp, chain_id);
}

std::string EncodeHeadValue(std::string_view etag, std::string_view head_bytes) {
  std::string v(2, '\0');
  StoreLe16(reinterpret_cast<uint8_t*>(v.data()), static_cast<uint16_t>(etag.size()));
  v += etag;
  v += head_bytes;
  return v;
}

Result<HeadRecord> DecodeHeadRecord(std::string_view key, std::string_view value) {
  if (value.size() < 2) return Status::Corruption("L1 head record too short");
  const size_t etag_len = LoadLe16(reinterpret_cast<const uint8_t*>(value.data()));
  if (value.size() < 2 + etag_len) return Status::Corruption("L1 head record etag truncated");
  HeadRecord r;
  r.etag.assign(value.substr(2, etag_len));
  WMBT_ASSIGN_OR_RETURN(r.head, layout::DecodeChainHead(AsBytes(value.substr(2 + etag_len)),
                                                        "in L1"));
  if (key != HeadKey(r.head.ns, r.head.fp, r.head.chain_id)) {
    return Status::Corruption("L1 head record stored under a key that does not match its head");
  }
  return r;
}

std::string PendingKey(std::string_view ns, const Fingerprint& fp, const BlockKey& key) {
  return ScopedKey(kPendingPrefix, ns, fp, key);
}

std::string EncodePending(const PendingRecord& r) {
  std::string v(BlockKey::kSize + ContentHash::kSize + 4 + 8, '\0');
  auto* p = reinterpret_cast<uint8_t*>(v.data());
  std::memcpy(p, r.parent.data(), BlockKey::kSize);
  std::memcpy(p + 32, r.hash.data(), ContentHash::kSize);
  StoreLe32(p + 52, r.length);
  StoreLe64(p + 56, r.put_us);
  return v;
}

Result<PendingEntry> DecodePending(std::string_view key, std::string_view value) {
  constexpr size_t kTail = Fingerprint::kSize + BlockKey::kSize;
  const size_t nul = key.find('\0');
  if (key.substr(0, 1) != kPendingPrefix || nul == std::string_view::npos ||
      key.size() != nul + 1 + kTail || value.size() != BlockKey::kSize + ContentHash::kSize + 12) {
    return Status::Corruption("L1 pending record is malformed");
  }
  PendingEntry e;
  e.ns.assign(key.substr(1, nul - 1));
  if (!ValidateNamespace(e.ns).ok()) return Status::Corruption("L1 pending record: bad namespace");
  auto k = reinterpret_cast<const uint8_t*>(key.data()) + nul + 1;
  e.fp = Fingerprint::FromBytes({k, Fingerprint::kSize});
  e.key = BlockKey::FromBytes({k + Fingerprint::kSize, BlockKey::kSize});
  auto v = reinterpret_cast<const uint8_t*>(value.data());
  e.record.parent = BlockKey::FromBytes({v, BlockKey::kSize});
  e.record.hash = ContentHash::FromBytes({v + 32, ContentHash::kSize});
  e.record.length = LoadLe32(v + 52);
  e.record.put_us = LoadLe64(v + 56);
  return e;
}

std::string UseKey(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id) {
  return ScopedKey(kUsePrefix, ns, fp, chain_id);
}

std::string EncodeUse(uint32_t tick) {
  std::string v(4, '\0');
  StoreLe32(reinterpret_cast<uint8_t*>(v.data()), tick);
  return v;
}

Result<UseEntry> DecodeUse(std::string_view key, std::string_view value) {
  constexpr size_t kTail = Fingerprint::kSize + ChainId::kSize;
  const size_t nul = key.find('\0');
  if (key.substr(0, 1) != kUsePrefix || nul == std::string_view::npos ||
      key.size() != nul + 1 + kTail || value.size() != 4) {
    return Status::Corruption("L1 use record is malformed");
  }
  UseEntry e;
  e.ns.assign(key.substr(1, nul - 1));
  if (!ValidateNamespace(e.ns).ok()) return Status::Corruption("L1 use record: bad namespace");
  auto k = reinterpret_cast<const uint8_t*>(key.data()) + nul + 1;
  e.fp = Fingerprint::FromBytes({k, Fingerprint::kSize});
  e.chain_id = ChainId::FromBytes({k + Fingerprint::kSize, ChainId::kSize});
  e.tick = LoadLe32(reinterpret_cast<const uint8_t*>(value.data()));
  return e;
}

std::string OrphanKey(std::string_view ns, const ContentHash& hash) {
  std::string k;
  k.reserve(1 + ns.size() + 1 + ContentHash::kSize);
  k += kOrphanPrefix;
  k += ns;
  k += '\0';
  k.append(reinterpret_cast<const char*>(hash.data()), ContentHash::kSize);
  return k;
}

std::string EncodeOrphan(uint64_t bytes, uint64_t since_us) {
  std::string v(16, '\0');
  StoreLe64(reinterpret_cast<uint8_t*>(v.data()), bytes);
  StoreLe64(reinterpret_cast<uint8_t*>(v.data()) + 8, since_us);
  return v;
}

Result<OrphanEntry> DecodeOrphan(std::string_view key, std::string_view value) {
  const size_t nul = key.find('\0');
  if (key.substr(0, 1) != kOrphanPrefix || nul == std::string_view::npos ||
      key.size() != nul + 1 + ContentHash::kSize || value.size() != 16) {
    return Status::Corruption("L1 orphan record is malformed");
  }
  OrphanEntry e;
  e.ns.assign(key.substr(1, nul - 1));
  if (!ValidateNamespace(e.ns).ok()) return Status::Corruption("L1 orphan record: bad namespace");
  e.hash = ContentHash::FromBytes(
      {reinterpret_cast<const uint8_t*>(key.data()) + nul + 1, ContentHash::kSize});
  auto v = reinterpret_cast<const uint8_t*>(value.data());
  e.bytes = LoadLe64(v);
  e.since_us = LoadLe64(v + 8);
  return e;
}

}  // namespace wombatkv::meta_records
