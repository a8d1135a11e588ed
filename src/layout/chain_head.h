// The chain head object: the commit point of a chain (one object write publishes it).
//
//   offset size  field
//   0      4     magic "WKH1"
//   4      1     format version (1)
//   5      1     flags (0)
//   6      2     namespace length N
//   8      12    fingerprint
//   20     32    chain id
//   52     8     version (1 for the first publish, +1 for each replacement)
//   60     8     publish time, microseconds since the Unix epoch (informational)
//   68     4     entry count E (>= 1)
//   72     N     namespace
//   72+N   56*E  entries root→tip: block key (32), content hash (20), payload length (4)
//   end-4  4     CRC32C of every preceding byte
// All integers little-endian. The root's parent is the zero key; entry i's parent is entry i-1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "index/radix_index.h"
#include "wombatkv/buffer.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::layout {

struct ChainHead {
  std::string ns;
  Fingerprint fp;
  ChainId chain_id;
  uint64_t version = 0;
  uint64_t published_us = 0;
  std::vector<ChainEntry> entries;

  const BlockKey& tip() const { return entries.back().key; }
};

// REQUIRES: entries non-empty and within limits::kChainBlocksMax.
std::string EncodeChainHead(const ChainHead& head);

// Size of the encoded head of a chain of `entries` blocks in a namespace of `ns_bytes` bytes:
// 76 + ns_bytes + 56·entries (what EncodeChainHead returns, and the object's size in L2).
size_t ChainHeadBytes(size_t ns_bytes, size_t entries);

// Corruption (naming `what`) on any framing, limit or CRC failure; never a partial head.
Result<ChainHead> DecodeChainHead(ByteView bytes, std::string_view what);

}  // namespace wombatkv::layout
