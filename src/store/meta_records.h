// Typed records the store keeps in L1 (MetaStore), and their byte encodings.
//
//   "F"                               → format marker "wombatkv-l1-v1"
//   "H" ns 0x00 fp(12) chain_id(32)   → head record: u16 etag length, etag, encoded chain head
//                                       (layout/chain_head.h, which carries its own CRC32C)
//   "P" ns 0x00 fp(12) key(32)        → pending block (put, not yet published): parent(32),
//                                       content hash(20), length u32, put time u64 (µs, wall)
//   "U" ns 0x00 fp(12) chain_id(32)   → last use of a published chain: u32 use tick (seconds
//                                       since kUseEpochMicros); deleted with its "H" record
//   "O" ns 0x00 hash(20)              → a blob this store stopped referencing and has not seen
//                                       deleted yet (an orphan awaiting GC): object bytes u64,
//                                       unreferenced since u64 (µs, wall)
// The MetaStore adds a CRC32C over key and value to every record; the head bytes carry a second
// one, so a head copied between planes is checked wherever it lands.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "layout/chain_head.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::meta_records {

inline constexpr std::string_view kFormatKey = "F";
inline constexpr std::string_view kFormatValue = "wombatkv-l1-v1";
inline constexpr std::string_view kHeadPrefix = "H";
inline constexpr std::string_view kPendingPrefix = "P";
inline constexpr std::string_view kUsePrefix = "U";
inline constexpr std::string_view kOrphanPrefix = "O";

std::string HeadKey(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id);
std::string EncodeHeadValue(std::string_view etag, std::string_view head_bytes);

struct HeadRecord {
  std::string etag;
  layout::ChainHead head;
};
// Corruption if the value does not parse or the head does not match its key.
Result<HeadRecord> DecodeHeadRecord(std::string_view key, std::string_view value);

struct PendingRecord {
  BlockKey parent;
  ContentHash hash;
  uint32_t length = 0;
  uint64_t put_us = 0;
};
std::string PendingKey(std::string_view ns, const Fingerprint& fp, const BlockKey& key);
std::string EncodePending(const PendingRecord& r);

struct PendingEntry {
  std::string ns;
  Fingerprint fp;
  BlockKey key;
  PendingRecord record;
};
// Corruption if the key or value does not parse.
Result<PendingEntry> DecodePending(std::string_view key, std::string_view value);

std::string UseKey(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id);
std::string EncodeUse(uint32_t tick);
struct UseEntry {
  std::string ns;
  Fingerprint fp;
  ChainId chain_id;
  uint32_t tick = 0;
};
Result<UseEntry> DecodeUse(std::string_view key, std::string_view value);

std::string OrphanKey(std::string_view ns, const ContentHash& hash);
std::string EncodeOrphan(uint64_t bytes, uint64_t since_us);
struct OrphanEntry {
  std::string ns;
  ContentHash hash;
  uint64_t bytes = 0;
  uint64_t since_us = 0;
};
Result<OrphanEntry> DecodeOrphan(std::string_view key, std::string_view value);

}  // namespace wombatkv::meta_records
