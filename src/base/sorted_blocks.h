// SortedBlocks: an ordered set of pointers to elements held elsewhere (a node-based hash map's
// entries), ordered by their `first` member, a string key. For an index whose lookups go
// through a hash map and which needs key order only for listings and snapshots.
//
// Why not std::map: an insert into a red-black tree of a million string keys descends ~20
// levels, and each level misses the cache twice (the node, then the key's heap bytes): 6 µs per
// new key with a million keys (docs/architecture.md, "Packed index"). Here the pointers sit in
// sorted blocks of at most kBlockMax, each beside 16 bytes of its key (its "head"), found through
// a small array that holds, per block, the prefix all the block's keys share and its first key's
// head. Heads are taken after the block's prefix: object keys share their first 26 bytes or more
// ("kv/<ns>/wombatkv/v1/blob/"), so heads of their first bytes would all tie. Searches compare
// prefixes and heads inline and read a key only on a tie; an insert moves at most kBlockMax slots.
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
  // 16 bytes of a key after its block's prefix, as two big-endian words (zero-padded): among keys
  // with that prefix, comparing heads orders keys as their bytes do, except that equal heads
  // need the keys themselves.
  struct Head {
    uint64_t hi = 0, lo = 0;
  };
  struct Slot {
    Head head;  // of e's key, so that a search reads the key only on a tie
    T* e;
  };
  using Block = std::vector<Slot>;
  static constexpr size_t kPrefixMax = 47;
  // What a search needs of a block without reading it: the first `skip` bytes that every key in
  // the block begins with, and the head of its first key. 64 bytes.
  struct Top {
    uint8_t skip = 0;
    char prefix[kPrefixMax] = {};
    Head first;
    std::string_view Prefix() const { return {prefix, skip}; }
  };

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
    if (blocks_.empty()) {
      blocks_.push_back({Slot{{}, e}});
      tops_.emplace_back();
      Reskip(0, key.substr(0, std::min(key.size(), kPrefixMax)));
      ++size_;
      return;
    }
    const size_t b = BlockFor(key);
    if (ComparePrefix(tops_[b], key) != 0) {  // the block's keys and this one share less
      Reskip(b, key.substr(0, CommonLength(key, tops_[b].Prefix())));
    }
    const Head h = HeadAt(key, tops_[b].skip);
    Block& block = blocks_[b];
    auto at = LowerBoundIn(block, key, h);
    WMBT_CHECK(at == block.end() || Compare(*at, key, h) != 0);
    const bool first = at == block.begin();
    block.insert(at, Slot{h, e});
    ++size_;
    if (first) tops_[b].first = h;
    if (block.size() > kBlockMax) Split(b);
  }

  // REQUIRES: e is in the set.
  void Erase(T* e) {
    const std::string_view key = e->first;
    const size_t b = BlockFor(key);
    Block& block = blocks_[b];
    auto at = LowerBoundIn(block, key, HeadAt(key, tops_[b].skip));
    WMBT_CHECK(at != block.end() && at->e == e);
    const bool first = at == block.begin();
    block.erase(at);
    --size_;
    if (block.empty()) {
      blocks_.erase(blocks_.begin() + static_cast<ptrdiff_t>(b));
      tops_.erase(tops_.begin() + static_cast<ptrdiff_t>(b));
      return;
    }
    if (first) tops_[b].first = block.front().head;
    MergeIfSmall(b);
  }

  void Clear() {
    blocks_.clear();
    tops_.clear();
    size_ = 0;
  }

 private:
  static Head HeadAt(std::string_view key, size_t skip) {
    unsigned char bytes[16] = {};
    if (key.size() > skip) {
      std::memcpy(bytes, key.data() + skip, std::min<size_t>(key.size() - skip, 16));
    }
    Head h;
    for (int i = 0; i < 8; ++i) h.hi = (h.hi << 8) | bytes[i];
    for (int i = 8; i < 16; ++i) h.lo = (h.lo << 8) | bytes[i];
    return h;
  }
  static size_t CommonLength(std::string_view a, std::string_view b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
  }
  // Where `key` stands against the keys that begin with t's prefix: <0 before all of them, 0
  // among them (it begins with the prefix too), >0 after all of them.
  static int ComparePrefix(const Top& t, std::string_view key) {
    const size_t n = std::min<size_t>(key.size(), t.skip);
    const int c = n == 0 ? 0 : std::memcmp(key.data(), t.prefix, n);
    if (c != 0) return c < 0 ? -1 : 1;
    return key.size() < t.skip ? -1 : 0;
  }
  // Orders head `a` (of key `ka`, read only on a tie) against `key` (head `h`, both taken after
  // the same prefix, which both keys begin with): <0, 0, >0.
  template <typename KeyOf>
  static int Compare(const Head& a, KeyOf&& ka, std::string_view key, const Head& h) {
    if (a.hi != h.hi) return a.hi < h.hi ? -1 : 1;
    if (a.lo != h.lo) return a.lo < h.lo ? -1 : 1;
    return std::string_view(ka()).compare(key);
  }
  static int Compare(const Slot& s, std::string_view key, const Head& h) {
    return Compare(s.head, [&] { return std::string_view(s.e->first); }, key, h);
  }
  // REQUIRES (both): `key` begins with the block's prefix; h is its head after it.
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

  // Orders block b's first key against `key`, reading the first key only on a tie of heads.
  int CompareFirst(size_t b, std::string_view key) const {
    const Top& t = tops_[b];
    if (const int c = ComparePrefix(t, key); c != 0) return -c;
    return Compare(t.first, [&] { return std::string_view(blocks_[b].front().e->first); }, key,
                   HeadAt(key, t.skip));
  }
  // The last block whose first key is not above `key` (block 0 if none is). REQUIRES: a block.
  size_t BlockFor(std::string_view key) const {
    const auto above = std::partition_point(tops_.begin(), tops_.end(), [&](const Top& t) {
      return CompareFirst(static_cast<size_t>(&t - tops_.data()), key) <= 0;
    });
    return above == tops_.begin() ? 0 : static_cast<size_t>(above - tops_.begin()) - 1;
  }

  Iterator Bound(std::string_view key, bool upper) const {
    if (blocks_.empty()) return end();
    const size_t b = BlockFor(key);
    const Block& block = blocks_[b];
    size_t index;
    if (const int c = ComparePrefix(tops_[b], key); c != 0) {
      index = c < 0 ? 0 : block.size();
    } else {
      const Head h = HeadAt(key, tops_[b].skip);
      index = static_cast<size_t>(
          (upper ? UpperBoundIn(block, key, h) : LowerBoundIn(block, key, h)) - block.begin());
    }
    return Iterator(&blocks_, b, index);
  }

  // Makes `prefix` (at most kPrefixMax bytes, begun with by every key of block b) the block's
  // prefix: every head of the block is taken again, reading every key.
  void Reskip(size_t b, std::string_view prefix) {
    Top& t = tops_[b];
    t.skip = static_cast<uint8_t>(prefix.size());
    if (!prefix.empty()) std::memmove(t.prefix, prefix.data(), prefix.size());
    for (Slot& s : blocks_[b]) s.head = HeadAt(s.e->first, t.skip);
    if (!blocks_[b].empty()) t.first = blocks_[b].front().head;
  }
  // After a split, lengthens block b's prefix to what its first and last keys (so all of its
  // keys) share, so that its heads tell its keys apart again.
  void Lengthen(size_t b) {
    const std::string_view first = blocks_[b].front().e->first, last = blocks_[b].back().e->first;
    const size_t n = std::min(CommonLength(first, last), kPrefixMax);
    if (n != tops_[b].skip) {
      Reskip(b, first.substr(0, n));
    } else {
      tops_[b].first = blocks_[b].front().head;
    }
  }

  void Split(size_t b) {
    Block& block = blocks_[b];
    const auto half = block.begin() + static_cast<ptrdiff_t>(block.size() / 2);
    Block upper(half, block.end());
    block.erase(half, block.end());
    blocks_.insert(blocks_.begin() + static_cast<ptrdiff_t>(b + 1), std::move(upper));
    tops_.insert(tops_.begin() + static_cast<ptrdiff_t>(b + 1), tops_[b]);
    Lengthen(b);
    Lengthen(b + 1);
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
    const Top& l = tops_[left];
    const Top& r = tops_[left + 1];
    const size_t shared = CommonLength(l.Prefix(), r.Prefix());
    const bool same = shared == l.skip && shared == r.skip;
    Block& into = blocks_[left];
    Block& from = blocks_[left + 1];
    into.insert(into.end(), from.begin(), from.end());
    blocks_.erase(blocks_.begin() + static_cast<ptrdiff_t>(left + 1));
    tops_.erase(tops_.begin() + static_cast<ptrdiff_t>(left + 1));
    if (!same) Reskip(left, tops_[left].Prefix().substr(0, shared));
  }

  std::vector<Block> blocks_;  // each sorted, non-empty; all in order
  std::vector<Top> tops_;      // tops_[b] for blocks_[b], searched without reading the blocks
  size_t size_ = 0;
};

}  // namespace wombatkv
