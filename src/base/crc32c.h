// CRC32C (Castagnoli), standard finalised value: Crc32c("123456789") == 0xE3069283.
// Uses carry-less multiplication over 512-bit registers for inputs of 256 bytes or more when the
// CPU has VPCLMULQDQ and AVX-512, else the SSE4.2 crc32 instruction (three interleaved streams
// for large inputs) when it has that, a portable table-driven fallback otherwise. Thread-safe,
// no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace wombatkv {

// Continues a finalised CRC over more bytes: Crc32cAppend(0, D) == Crc32c(D), and appending in
// pieces equals one call over the concatenation.
uint32_t Crc32cAppend(uint32_t crc, const uint8_t* data, size_t n);

inline uint32_t Crc32c(const uint8_t* data, size_t n) { return Crc32cAppend(0, data, n); }
inline uint32_t Crc32c(std::span<const uint8_t> in) { return Crc32cAppend(0, in.data(), in.size()); }

// The CRC32C of A || B from crc_a = Crc32c(A), crc_b = Crc32c(B) and len_b = |B|, without the
// bytes: Crc32cCombine(Crc32c(A), Crc32c(B), |B|) == Crc32cAppend(Crc32c(A), B). O(log len_b).
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// Exposed for tests: each implementation on its own, and which ones this CPU can run.
uint32_t Crc32cAppendPortable(uint32_t crc, const uint8_t* data, size_t n);
bool Crc32cHardwareAvailable();  // the crc32 instruction (SSE4.2)
bool Crc32cFoldingAvailable();   // VPCLMULQDQ and AVX-512 (and the crc32 instruction)
// Any n; each dies unless the CPU has what it uses (the two functions above).
uint32_t Crc32cAppendInstruction(uint32_t crc, const uint8_t* data, size_t n);
uint32_t Crc32cAppendFolding(uint32_t crc, const uint8_t* data, size_t n);

}  // namespace wombatkv
