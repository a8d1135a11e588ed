// EngineKeyHash: the hash for hash tables keyed by what engines choose — block keys and chain
// ids. Every byte is mixed, with abseil's per-process seed, so keys an engine (or a hostile
// client) makes share a prefix or a word do not share a hash and pile up in one bucket or probe
// run. (`FixedBytesHash`, the first 8 bytes, is for BLAKE3 content hashes, which are ours.)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/hash/hash.h"
#include "wombatkv/types.h"

namespace wombatkv {

struct EngineKeyHash {
  template <size_t N, typename Tag>
  size_t operator()(const FixedBytes<N, Tag>& v) const {
    return absl::Hash<std::array<uint8_t, N>>{}(v.bytes);
  }
  // Two of them (a scope and a key in it) as one value.
  template <size_t N, typename TagN, size_t M, typename TagM>
  size_t operator()(const FixedBytes<N, TagN>& a, const FixedBytes<M, TagM>& b) const {
    using Pair = std::pair<std::array<uint8_t, N>, std::array<uint8_t, M>>;
    return absl::Hash<Pair>{}(Pair{a.bytes, b.bytes});
  }
};

}  // namespace wombatkv
