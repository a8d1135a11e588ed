#include "index/chain_table.h"

#include <bit>
#include <cstring>

#include "base/check.h"

namespace wombatkv {
namespace {

constexpr size_t kSlotsMin = 4;

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline bool SameId(const BlockKey& a, const BlockKey& b) {
  return std::memcmp(a.data(), b.data(), a.bytes.size()) == 0;
}

// Bytes a vector's buffer takes on the heap (glibc: 8-byte header, 16-byte granules).
template <typename T>
size_t BufferBytes(const std::vector<T>& v) {
  return v.capacity() == 0 ? 0 : (v.capacity() * sizeof(T) + 8 + 15) & ~size_t{15};
}

}  // namespace

ChainTable::ChainTable(const NodeKeys* keys, uint64_t seed) : keys_(keys), seed_(seed) {}

uint32_t ChainTable::Hash(const ChainId& id) const {
  // Ids are normally tip keys (hashes), but engines choose them: all 32 bytes are mixed, with a
  // per-process seed, so crafted ids cannot pile up in one probe run.
  const uint8_t* p = id.data();
  uint64_t h = ((Load64(p) ^ seed_) * 0x9E3779B97F4A7C15ull) ^
               std::rotl(Load64(p + 8) * 0xC2B2AE3D27D4EB4Full, 21) ^
               std::rotl(Load64(p + 16) * 0x165667B19E3779F9ull, 37) ^
               std::rotl(Load64(p + 24) * 0xD6E8FEB86659FD93ull, 53);
  h ^= h >> 29;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 32;
  return static_cast<uint32_t>(h);
}

const ChainId& ChainTable::IdOf(const ChainRecord& rec) const {
  return rec.has_side() ? sides_[rec.side()].id : keys_->KeyOf(rec.tip);
}

bool ChainTable::Locate(const ChainId& id, Ref* ref) const {
  const size_t part = PartOf(id);
  const Part& p = parts_[part];
  if (p.slots.empty()) return false;
  const uint32_t mask = static_cast<uint32_t>(p.slots.size() - 1);
  const uint32_t hash = Hash(id);
  for (size_t i = hash & mask; p.slots[i] != kEmpty; i = (i + 1) & mask) {
    const uint32_t slot = p.slots[i];
    if ((slot ^ hash) & ~mask) continue;  // another hash: neither record nor id is read
    const ChainRecord& rec = p.records[slot & mask];
    if (SameId(IdOf(rec), id)) {
      *ref = Ref{static_cast<uint32_t>(part), slot & mask};
      return true;
    }
  }
  return false;
}

const ChainRecord* ChainTable::Find(const ChainId& id) const {
  Ref ref;
  return Locate(id, &ref) ? &(*this)[ref] : nullptr;
}

size_t ChainTable::SlotOf(const Part& part, uint32_t hash, uint32_t at) {
  const uint32_t mask = static_cast<uint32_t>(part.slots.size() - 1);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    WMBT_CHECK(part.slots[i] != kEmpty);  // the record is in the table
    if ((part.slots[i] & mask) == at) return i;
  }
}

void ChainTable::InsertSlot(Part* part, uint32_t hash, uint32_t at) {
  const uint32_t mask = static_cast<uint32_t>(part->slots.size() - 1);
  size_t i = hash & mask;
  while (part->slots[i] != kEmpty) i = (i + 1) & mask;
  part->slots[i] = (hash & ~mask) | at;
}

void ChainTable::Rehash(Part* part, size_t slots) const {
  part->slots.assign(slots, kEmpty);
  for (size_t at = 0; at < part->records.size(); ++at) {
    InsertSlot(part, HashOf(part->records[at]), static_cast<uint32_t>(at));
  }
}

void ChainTable::Fill(ChainRecord* rec, const ChainId& id, const ChainValue& value) {
  rec->tip = value.tip;
  rec->length = value.length;
  rec->set_etag_digest(value.etag_digest);
  if (value.version < ChainRecord::kSide && SameId(id, value.tip_key)) {
    rec->version_or_side = static_cast<uint32_t>(value.version);
    return;
  }
  uint32_t at;
  if (free_sides_.empty()) {
    WMBT_CHECK(sides_.size() < ChainRecord::kSide);
    at = static_cast<uint32_t>(sides_.size());
    sides_.push_back(Side{id, value.version});
  } else {
    at = free_sides_.back();
    free_sides_.pop_back();
    sides_[at] = Side{id, value.version};
  }
  rec->version_or_side = ChainRecord::kSide | at;
}

void ChainTable::Release(const ChainRecord& rec) {
  if (rec.has_side()) free_sides_.push_back(rec.side());
}

void ChainTable::Add(const ChainId& id, const ChainValue& value) {
  if (parts_.size() == 1 && size_ + 1 > kSplitAt) Split();
  Part& p = parts_[PartOf(id)];
  if ((p.records.size() + 1) * 4 > p.slots.size() * 3) {
    Rehash(&p, std::max(kSlotsMin, p.slots.size() * 2));  // 3/4 full at most
  }
  if (p.records.size() == p.records.capacity()) {
    p.records.reserve(p.records.size() + p.records.size() / 4 + 2);  // little slack: 20 B each
  }
  WMBT_CHECK(p.records.size() < kEmpty);
  const uint32_t at = static_cast<uint32_t>(p.records.size());
  Fill(&p.records.emplace_back(), id, value);
  InsertSlot(&p, Hash(id), at);
  ++size_;
}

void ChainTable::Set(Ref ref, const ChainId& id, const ChainValue& value) {
  ChainRecord& rec = parts_[ref.part].records[ref.at];
  Release(rec);
  Fill(&rec, id, value);
}

void ChainTable::Erase(Ref ref, const ChainId& id) {
  Part& p = parts_[ref.part];
  const uint32_t mask = static_cast<uint32_t>(p.slots.size() - 1);
  // Linear probing: shift back every later entry of the run that may move into the hole (with
  // its hash bits: they do not depend on where it sits).
  size_t hole = SlotOf(p, Hash(id), ref.at);
  for (size_t j = (hole + 1) & mask; p.slots[j] != kEmpty; j = (j + 1) & mask) {
    const size_t home = HashOf(p.records[p.slots[j] & mask]) & mask;
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      p.slots[hole] = p.slots[j];
      hole = j;
    }
  }
  p.slots[hole] = kEmpty;
  Release(p.records[ref.at]);
  const uint32_t last = static_cast<uint32_t>(p.records.size() - 1);
  if (ref.at != last) {  // the last record fills the hole (its tip is live: its id can be read)
    uint32_t& slot = p.slots[SlotOf(p, HashOf(p.records[last]), last)];
    slot = (slot & ~mask) | ref.at;
    p.records[ref.at] = p.records[last];
  }
  p.records.pop_back();
  --size_;
  if (p.records.capacity() > 2 * p.records.size() + 16) p.records.shrink_to_fit();
  if (p.slots.size() > kSlotsMin && p.records.size() * 16 < p.slots.size() * 3) {
    Rehash(&p, p.slots.size() / 2);  // under 3/16 full: halved, under 3/8
  }
}

void ChainTable::Split() {
  std::vector<Part> split(RadixIndex::kChainSlices);
  for (const ChainRecord& r : parts_[0].records) {
    split[RadixIndex::ChainSlice(IdOf(r))].records.push_back(r);
  }
  for (Part& p : split) {
    if (!p.records.empty()) Rehash(&p, std::bit_ceil(std::max(kSlotsMin, p.records.size() * 2)));
  }
  parts_ = std::move(split);
}

size_t ChainTable::MemoryBytes() const {
  size_t b = BufferBytes(parts_) + BufferBytes(sides_) + BufferBytes(free_sides_);
  for (const Part& p : parts_) b += BufferBytes(p.records) + BufferBytes(p.slots);
  return b;
}

}  // namespace wombatkv
