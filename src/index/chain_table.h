// ChainTable: one scope's chain records (L0), keyed by chain id, ~52 bytes per chain.
//
// A chain costs its record whatever its length, so with short chains the records weigh as much
// as the nodes (docs/layout.md). Compact because:
//   - records sit in one array per part (no allocation per chain), found through an open-addressing
//     table of 4-byte slots kept 3/16..3/4 full (chains are looked up once per publish or eviction
//     step, not per block). A slot's low bits (as many as index the table) hold a record index,
//     the others the same bits of the record's hash: a probe reads a record and its id only when
//     those match, so looking for a new chain, every save's first publish, reads the slots
//     alone (at 3/4 full it read four records' ids on average; BENCHMARKS.md, "Session 35");
//   - a chain whose id is its tip's key — what the C ABI publishes — does not store the id: it is
//     read from the tip node (through NodeKeys). Other ids go to a side array;
//   - the head's ETag is packed into 20 bytes (CompactEtag); one that does not fit is spilled to a
//     side array.
// Past kSplitAt chains the records are held in RadixIndex::kChainSlices parts, one per slice, so
// a visit of one slice reads only its own chains (the store writes one slice's use stamps a
// second: docs/capacity.md). Below that, one part (64 would cost a small scope ~2 KiB).
//
// Record indices move when another record is erased (the last one fills the hole): a Ref or a
// record pointer is valid until the next Add or Erase.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "index/compact_etag.h"
#include "index/radix_index.h"
#include "wombatkv/types.h"

namespace wombatkv {

// The key of a live node, by index (RadixIndex's arena).
class NodeKeys {
 public:
  virtual const BlockKey& KeyOf(uint32_t node) const = 0;

 protected:
  ~NodeKeys() = default;
};

struct ChainRecord {
  static constexpr uint32_t kIdIsTipKey = UINT32_MAX;
  uint32_t tip = 0;  // node index (I4)
  uint32_t length = 0;
  uint64_t version = 0;
  uint32_t id_at = kIdIsTipKey;  // else the id's index in the table's side array
  CompactEtag etag;
};
static_assert(sizeof(ChainRecord) == 40);

// What a chain's record says. `tip_key` is the key of node `tip`.
struct ChainValue {
  uint32_t tip = 0;
  BlockKey tip_key;
  uint32_t length = 0;
  uint64_t version = 0;
  std::string_view etag;
};

class ChainTable {
 public:
  static constexpr size_t kSplitAt = 256;

  // `keys` must outlive the table and answer for every record's tip.
  ChainTable(const NodeKeys* keys, uint64_t seed);

  struct Ref {
    uint32_t part = 0;
    uint32_t at = 0;
  };
  // REQUIRES for a Ref: from Locate, with no Add or Erase since.
  bool Locate(const ChainId& id, Ref* ref) const;
  const ChainRecord& operator[](Ref ref) const { return parts_[ref.part].records[ref.at]; }
  // Null if absent; valid until the next Add or Erase.
  const ChainRecord* Find(const ChainId& id) const;

  // REQUIRES: id absent.
  void Add(const ChainId& id, const ChainValue& value);
  // Replaces the record at `ref`, which is id's. Does not read the old tip (it may be gone).
  void Set(Ref ref, const ChainId& id, const ChainValue& value);
  // Removes the record at `ref`, which is id's. Does not read its tip.
  void Erase(Ref ref, const ChainId& id);

  ChainId IdOf(const ChainRecord& rec) const;
  std::string EtagOf(const ChainRecord& rec) const;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t MemoryBytes() const;

  // fn(id, record) for every chain.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Part& p : parts_) {
      for (const ChainRecord& r : p.records) fn(IdOf(r), r);
    }
  }
  // fn(id, record) for every chain of slice `slice`.
  template <typename Fn>
  void ForEachIn(size_t slice, Fn&& fn) const {
    if (parts_.size() > 1) {
      for (const ChainRecord& r : parts_[slice].records) fn(IdOf(r), r);
      return;
    }
    for (const ChainRecord& r : parts_[0].records) {
      const ChainId id = IdOf(r);
      if (RadixIndex::ChainSlice(id) == slice) fn(id, r);
    }
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Part {
    std::vector<ChainRecord> records;
    // (hash & ~mask) | record index, or kEmpty; a power of two, or empty. A record index is
    // below 3/4 of the size, so a slot is never kEmpty.
    std::vector<uint32_t> slots;
  };

  uint32_t Hash(const ChainId& id) const;
  uint32_t HashOf(const ChainRecord& rec) const { return Hash(IdOf(rec)); }
  size_t PartOf(const ChainId& id) const {
    return parts_.size() == 1 ? 0 : RadixIndex::ChainSlice(id);
  }
  // The slot holding record `at` of `part`, whose id hashes to `hash`.
  static size_t SlotOf(const Part& part, uint32_t hash, uint32_t at);
  static void InsertSlot(Part* part, uint32_t hash, uint32_t at);
  void Rehash(Part* part, size_t slots) const;
  void Fill(ChainRecord* rec, const ChainId& id, const ChainValue& value);
  void Release(const ChainRecord& rec);  // its side-array entries
  void Split();

  const NodeKeys* keys_;
  uint64_t seed_;
  std::vector<Part> parts_ = std::vector<Part>(1);  // one, or kChainSlices (then by slice)
  size_t size_ = 0;
  std::vector<ChainId> ids_;  // ids that are not their tip's key
  std::vector<uint32_t> free_ids_;
  std::vector<std::string> etags_;  // ETags CompactEtag could not pack
  std::vector<uint32_t> free_etags_;
};

}  // namespace wombatkv
