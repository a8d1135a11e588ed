// The synthetic engine behind wombatkv-workload: token ids, block keys and "KV" payloads, every
// one a pure function of the seed and the shape, so that two runs (or two processes) with the same
// flags produce identical keys and bytes — which is what lets a second run restore what the first
// stored, and lets every restored byte be checked.
//
//   tokens   kTokensPerBlock ids per block, drawn from (seed, stream, block index); the system
//            prompt is stream 0, turn t of conversation c its own stream.
//   key      BLAKE3(parent key || tokens as little-endian u32), 32 bytes: a hash chain, so a key
//            names its whole prefix, as an engine's prefix cache does.
//   payload  block_bytes bytes expanded from (key, block_bytes) by splitmix64: identical prefixes
//            give identical bytes (and so one stored object: content addressing deduplicates).
//
// Pure functions: thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "wombatkv/types.h"

namespace wombatkv::workload {

inline constexpr uint32_t kTokensPerBlock = 16;

struct Shape {
  uint32_t conversations = 8;
  uint32_t turns = 6;
  uint32_t system_blocks = 16;
  // Blocks a turn appends: uniform in [1, 2*turn_blocks] (mean ~turn_blocks), or exactly
  // turn_blocks when fixed_turn_blocks.
  uint32_t turn_blocks = 4;
  bool fixed_turn_blocks = false;
  uint64_t block_bytes = 256 * 1024;
  uint64_t seed = 1;
};

using Tokens = std::array<uint32_t, kTokensPerBlock>;

// Token ids of block `index` of `stream`.
Tokens BlockTokens(uint64_t seed, uint64_t stream, uint64_t index);
// The stream of conversation `conv`, turn `turn` (the system prompt is stream 0).
uint64_t TurnStream(uint32_t conv, uint32_t turn);
// How many blocks turn `turn` of conversation `conv` appends.
uint32_t TurnBlocks(const Shape& shape, uint32_t conv, uint32_t turn);
// BLAKE3 hash chain step.
BlockKey ChainKey(const BlockKey& parent, const Tokens& tokens);
// Fills `out` with the payload of `key` (out.size() is the block size).
void FillPayload(const BlockKey& key, std::span<uint8_t> out);
// The fingerprint of the synthetic model: the KV layout (block bytes, tokens per block) is part
// of the model identity, so runs with different --block-bytes never mix blocks.
Fingerprint SyntheticFingerprint(const Shape& shape);

}  // namespace wombatkv::workload
