// SortedBlocks: an ordered set of pointers to elements held elsewhere (a node-based hash map's
// entries), ordered by their `first` member, a string key. For an index whose lookups go
// through a hash map and which needs key order only for listings and snapshots.
//
// Why not std::map: an insert into a red-black tree of a million string keys descends ~20
// levels, and each level misses the cache twice (the node, then the key's heap bytes): 6 µs per
// new key with a million keys (docs/architecture.md, "Packed index"). Here the pointers sit in
// sorted blocks of at most kBlockMax, each beside its key's first 16 bytes, found through a
// small array of each block's first head. Searches compare those heads inline and read a key
// only on a tie; an insert moves at most kBlockMax slots.
//
// Not thread-safe. An element must stay where it is, with the same key, while it is in the set.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"

namespace wombatkv {

template <typename T>
class SortedBlocks {
 private:
  // A key's first 16 bytes as two big-endian words (zero-padded): comparing heads orders keys
  // as their bytes do, except that equal heads need the keys themselves.
  struct Head {
    uint64_t hi = 0, lo = 0;
  };
  struct Slot {
    Head head;  // of e's key, so that a search reads the key only on a tie
    T* e;
  };
  using Block = std::vector<Slot>;

 public:
  static constexpr size_t kBlockMax = 256;

  class Iterator {
   public:
    T* operator*() const { return (*blocks_)[block_][index_].e; }
    Iterator& operator++() {
      if (++index_ == (*blocks_)[block_].size()) {
        ++block_;
        index_ = 0;
      }
      return *this;
    }
    bool operator==(const Iterator& o) const { return block_ == o.block_ && index_ == o.index_; }

   private:
    friend class SortedBlocks;
    Iterator(const std::vector<Block>* blocks, size_t block, size_t index)
        : blocks_(blocks), block_(block), index_(index) {
      if (block_ < blocks_->size() && index_ == (*blocks_)[block_].size()) {
        ++block_;
        index_ = 0;
      }
    }
    const std::vector<Block>* blocks_;
    size_t block_;  // blocks_->size() at the end
    size_t index_;
  };

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Iterator begin() const { return Iterator(&blocks_, 0, 0); }
  Iterator end() const { return Iterator(&blocks_, blocks_.size(), 0); }

  // The first element whose key is not less than `key` (Upper: greater than `key`).
  Iterator LowerBound(std::string_view key) const { return Bound(key, /*upper=*/false); }
  Iterator UpperBound(std::string_view key) const { return Bound(key, /*upper=*/true); }

  // REQUIRES: no element in the set has e's key.
  void Insert(T* e) {
    const std::string_view key = e->first;
    const Slot slot{HeadOf(key), e};
    if (blocks_.empty()) {
      blocks_.push_back({slot});
      heads_.push_back(slot.head);
      ++size_;
      return;
    }
    const size_t b = BlockFor(key, slot.head);
    Block& block = blocks_[b];
    auto at = LowerBoundIn(block, key, slot.head);
    WMBT_CHECK(at == block.end() || Compare(*at, key, slot.head) != 0);
    const bool first = at == block.begin();
    block.insert(at, slot);
    ++size_;
    if (first) heads_[b] = slot.head;
    if (block.size() > kBlockMax) Split(b);
  }

  // REQUIRES: e is in the set.
  void Erase(T* e) {
    const std::string_view key = e->first;
    const Head h = HeadOf(key);
    const size_t b = BlockFor(key, h);
    Block& block = blocks_[b];
    auto at = LowerBoundIn(block, key, h);
    WMBT_CHECK(at != block.end() && at->e == e);
    const bool first = at == block.begin();
    block.erase(at);
    --size_;
    if (block.empty()) {
      blocks_.erase(blocks_.begin() + static_cast<ptrdiff_t>(b));
      heads_.erase(heads_.begin() + static_cast<ptrdiff_t>(b));
      return;
    }
    if (first) heads_[b] = block.front().head;
    MergeIfSmall(b);
  }

  void Clear() {
    blocks_.clear();
    heads_.clear();
    size_ = 0;
  }

 private:
  static Head HeadOf(std::string_view key) {
    unsigned char bytes[16] = {};
    std::memcpy(bytes, key.data(), std::min<size_t>(key.size(), 16));
    Head h;
    for (int i = 0; i < 8; ++i) h.hi = (h.hi << 8) | bytes[i];
    for (int i = 8; i < 16; ++i) h.lo = (h.lo << 8) | bytes[i];
    return h;
  }
  // Orders head `a` (of key `ka`, read only on a tie) against `key` (head `h`): <0, 0, >0.
  template <typename KeyOf>
  static int Compare(const Head& a, KeyOf&& ka, std::string_view key, const Head& h) {
    if (a.hi != h.hi) return a.hi < h.hi ? -1 : 1;
    if (a.lo != h.lo) return a.lo < h.lo ? -1 : 1;
    return std::string_view(ka()).compare(key);
  }
  static int Compare(const Slot& s, std::string_view key, const Head& h) {
    return Compare(s.head, [&] { return std::string_view(s.e->first); }, key, h);
  }
  static typename Block::const_iterator LowerBoundIn(const Block& block, std::string_view key,
                                                     const Head& h) {
    return std::partition_point(block.begin(), block.end(),
                                [&](const Slot& s) { return Compare(s, key, h) < 0; });
  }
  static typename Block::const_iterator UpperBoundIn(const Block& block, std::string_view key,
                                                     const Head& h) {
    return std::partition_point(block.begin(), block.end(),
                                [&](const Slot& s) { return Compare(s, key, h) <= 0; });
  }

  // The last block whose first key is not above `key` (block 0 if none is). REQUIRES: a block.
  size_t BlockFor(std::string_view key, const Head& h) const {
    const auto above = std::partition_point(
        heads_.begin(), heads_.end(), [&](const Head& first) {
          const size_t b = static_cast<size_t>(&first - heads_.data());
          return Compare(first, [&] { return std::string_view(blocks_[b].front().e->first); },
                         key, h) <= 0;
        });
    return above == heads_.begin() ? 0 : static_cast<size_t>(above - heads_.begin()) - 1;
  }

  Iterator Bound(std::string_view key, bool upper) const {
    if (blocks_.empty()) return end();
    const Head h = HeadOf(key);
    const size_t b = BlockFor(key, h);
    const Block& block = blocks_[b];
    auto at = upper ? UpperBoundIn(block, key, h) : LowerBoundIn(block, key, h);
    return Iterator(&blocks_, b, static_cast<size_t>(at - block.begin()));
  }

  void Split(size_t b) {
    Block& block = blocks_[b];
    const auto half = block.begin() + static_cast<ptrdiff_t>(block.size() / 2);
    Block upper(half, block.end());
    block.erase(half, block.end());
    const Head head = upper.front().head;
    blocks_.insert(blocks_.begin() + static_cast<ptrdiff_t>(b + 1), std::move(upper));
    heads_.insert(heads_.begin() + static_cast<ptrdiff_t>(b + 1), head);
  }

  // Joins block b with a neighbour once it is a quarter full and both fit in half a block, so
  // that erasures cannot leave a block per element.
  void MergeIfSmall(size_t b) {
    if (blocks_[b].size() >= kBlockMax / 4) return;
    auto fit = [&](size_t l) { return blocks_[l].size() + blocks_[l + 1].size() <= kBlockMax / 2; };
    size_t left;
    if (b + 1 < blocks_.size() && fit(b)) {
      left = b;
    } else if (b > 0 && fit(b - 1)) {
      left = b - 1;
    } else {
      return;
    }
    Block& into = blocks_[left];
    Block& from = blocks_[left + 1];
    into.insert(into.end(), from.begin(), from.end());
    blocks_.erase(blocks_.begin() + static_cast<ptrdiff_t>(left + 1));
    heads_.erase(heads_.begin() + static_cast<ptrdiff_t>(left + 1));
  }

  std::vector<Block> blocks_;  // each sorted, non-empty; all in order
  std::vector<Head> heads_;    // heads_[b]: blocks_[b].front().head, searched without the blocks
  size_t size_ = 0;
};

}  // namespace wombatkv
