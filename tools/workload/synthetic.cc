#include "tools/workload/synthetic.h"

#include <cstring>
#include <string>

#include "base/blake3_hash.h"

namespace wombatkv::workload {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t state = a ^ (b * 0xd6e8feb86659fd93ull);
  return SplitMix64(state);
}

}  // namespace

Tokens BlockTokens(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t state = Mix(Mix(seed, stream), index);
  Tokens tokens;
  for (uint32_t& t : tokens) t = static_cast<uint32_t>(SplitMix64(state) % 128000);  // a vocab
  return tokens;
}

uint64_t TurnStream(uint32_t conv, uint32_t turn) {
  return 1 + ((uint64_t{conv} << 32) | turn);
}

uint32_t TurnBlocks(const Shape& shape, uint32_t conv, uint32_t turn) {
  if (shape.fixed_turn_blocks || shape.turn_blocks == 0) return shape.turn_blocks;
  uint64_t state = Mix(Mix(shape.seed ^ 0x7475726eull, conv), turn);  // "turn"
  return 1 + static_cast<uint32_t>(SplitMix64(state) % (2ull * shape.turn_blocks));
}

BlockKey ChainKey(const BlockKey& parent, const Tokens& tokens) {
  uint8_t le[kTokensPerBlock * 4];
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (int b = 0; b < 4; ++b) le[4 * i + b] = static_cast<uint8_t>(tokens[i] >> (8 * b));
  }
  Blake3Hasher h;
  h.Update(parent.bytes);
  h.Update(le);
  BlockKey key;
  h.Finalize(key.bytes);
  return key;
}

void FillPayload(const BlockKey& key, std::span<uint8_t> out) {
  uint64_t state = key.Prefix64() ^ Mix(out.size(), 0x6b76ull);  // "kv"
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    uint64_t v = SplitMix64(state);
    std::memcpy(out.data() + i, &v, 8);
  }
  if (i < out.size()) {
    uint64_t v = SplitMix64(state);
    std::memcpy(out.data() + i, &v, out.size() - i);
  }
}

Fingerprint SyntheticFingerprint(const Shape& shape) {
  FingerprintSpec spec;
  spec.model_id = "wombatkv-workload/synthetic";
  spec.tokenizer_id = "synthetic-128k";
  spec.kv_dtype = "bytes";
  spec.extras["block_bytes"] = std::to_string(shape.block_bytes);
  spec.extras["tokens_per_block"] = std::to_string(kTokensPerBlock);
  return spec.Digest();
}

}  // namespace wombatkv::workload
