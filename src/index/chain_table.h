// ChainTable: one scope's chain records (L0), keyed by chain id, ~28 bytes per chain.
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
//     read from the tip node (through NodeKeys). A record keeps a 31-bit version; a chain whose id
//     is another or whose version is past that has a side entry (the id and the whole version);
//   - of the head's ETag only a 64-bit digest is kept (RadixIndex::EtagDigest): enough to tell
//     whether a listed head is the one L0 has. The store reads the ETag from L2 when it writes the
//     head again (docs/architecture.md, "Publish").
// Past kSplitAt chains the records are held in RadixIndex::kChainSlices parts, one per slice, so
// a visit of one slice reads only its own chains (the store writes one slice's use stamps a
// second: docs/capacity.md). Below that, one part (64 would cost a small scope ~2 KiB).
//
// Record indices move when another record is erased (the last one fills the hole): a Ref or a
// record pointer is valid until the next Add or Erase.
#pragma once

#include <cstdint>
#include <vector>

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
  static constexpr uint32_t kSide = 1u << 31;
  uint32_t tip = 0;  // node index (I4)
  uint32_t length = 0;
  // The version if below kSide, else kSide | the index of the chain's side entry.
  uint32_t version_or_side = 0;

  bool has_side() const { return version_or_side >= kSide; }
  uint32_t side() const { return version_or_side & ~kSide; }
  uint64_t etag_digest() const { return uint64_t{digest_high} << 32 | digest_low; }
  void set_etag_digest(uint64_t d) {
    digest_low = static_cast<uint32_t>(d);
    digest_high = static_cast<uint32_t>(d >> 32);
  }

 private:
  uint32_t digest_low = 0;  // two halves: 4-byte alignment keeps the record at 20 bytes
  uint32_t digest_high = 0;
};
static_assert(sizeof(ChainRecord) == 20);

// What a chain's record says. `tip_key` is the key of node `tip`.
struct ChainValue {
  uint32_t tip = 0;
  BlockKey tip_key;
  uint32_t length = 0;
  uint64_t version = 0;
  uint64_t etag_digest = 0;
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

  // The tip node's key or the side entry's id: valid until the next Add, Set or Erase.
  const ChainId& IdOf(const ChainRecord& rec) const;
  uint64_t VersionOf(const ChainRecord& rec) const {
    return rec.has_side() ? sides_[rec.side()].version : rec.version_or_side;
  }
  size_t side_entries() const { return sides_.size() - free_sides_.size(); }

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
  void Release(const ChainRecord& rec);  // its side entry
  void Split();

  const NodeKeys* keys_;
  uint64_t seed_;
  std::vector<Part> parts_ = std::vector<Part>(1);  // one, or kChainSlices (then by slice)
  size_t size_ = 0;
  struct Side {
    ChainId id;
    uint64_t version = 0;
  };
  // For chains whose id is not their tip's key or whose version does not fit the record.
  std::vector<Side> sides_;
  std::vector<uint32_t> free_sides_;
};

}  // namespace wombatkv
