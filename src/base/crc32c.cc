// CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
//
// Three implementations behind one dispatch:
//   * Portable: slicing-by-8 tables, runs anywhere.
//   * x86-64 SSE4.2: the `crc32` instruction, with large inputs split into three interleaved
//     streams. At most 8 bytes a cycle: one `crc32` per cycle.
//   * x86-64 folding, for inputs of kFoldMinBytes or more on CPUs with VPCLMULQDQ and AVX-512:
//     carry-less multiplication folds 256 bytes per step in four 512-bit registers, then the
//     `crc32` instruction reduces the last 16 bytes of state; 1.7-2.8x the three streams from
//     256 bytes on (55-57 GB/s against 21-28 at 4 KiB-2 MiB on the AMD EPYC VM of
//     BENCHMARKS.md, session 34).
// Only the functions marked with a target attribute use those instructions, and they are only
// called after a runtime CPU check, so the library still runs on CPUs without them.
//
// Vocabulary used below. The "register" is the un-inverted CRC state; the public, finalised value
// is ~register (Crc32cAppend inverts on entry and on exit, which is why Crc32cAppend(0, D) ==
// Crc32c(D) and appending in pieces composes). In the reflected convention bit 31 of a 32-bit
// word is the coefficient of x^0 and bit 0 the coefficient of x^31. Feeding one zero bit to the
// register multiplies it by x modulo P, so feeding n zero bytes multiplies it by x^(8n) mod P.
#include "base/crc32c.h"

#include "base/check.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WMBT_CRC32C_X86 1
#include <immintrin.h>
#endif

namespace wombatkv {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, reflected

// ---------------------------------------------------------------------------------------------
// GF(2) arithmetic modulo P, in the reflected convention. Used at compile time to build tables.

// a * b mod P. Walks a's coefficients from x^0 (bit 31) upwards while b is multiplied by x.
constexpr uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    if (a & (0x80000000u >> i)) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^k mod P by square-and-multiply.
constexpr uint32_t XPowModP(uint64_t k) {
  uint32_t result = 0x80000000u;  // x^0
  uint32_t base = 0x40000000u;    // x^1
  while (k != 0) {
    if (k & 1) result = MultModP(result, base);
    base = MultModP(base, base);
    k >>= 1;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Portable: slicing-by-8.
//
// kSlice[0][b] is the register after feeding byte b to a zero register (the classic byte table);
// kSlice[k][b] is that followed by k zero bytes. Eight input bytes XORed into the low 64 bits of
// the register then advance in one step: byte i of the word still has 7 - i bytes to travel.

using Slice8Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Slice8Tables MakeSlice8Tables() {
  Slice8Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr Slice8Tables kSlice = MakeSlice8Tables();

// Little-endian loads spelled byte by byte so the portable path is endian-independent; compilers
// turn this into one load on little-endian targets.
inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t RegisterPortable(uint32_t reg, const uint8_t* p, size_t n) {
  uint64_t c = reg;
  while (n >= 8) {
    const uint64_t w = LoadLE64(p) ^ c;
    c = kSlice[7][w & 0xff] ^ kSlice[6][(w >> 8) & 0xff] ^ kSlice[5][(w >> 16) & 0xff] ^
        kSlice[4][(w >> 24) & 0xff] ^ kSlice[3][(w >> 32) & 0xff] ^ kSlice[2][(w >> 40) & 0xff] ^
        kSlice[1][(w >> 48) & 0xff] ^ kSlice[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n != 0) {
    c = kSlice[0][(c ^ *p) & 0xff] ^ (c >> 8);
    ++p;
    --n;
  }
  return static_cast<uint32_t>(c);
}

#ifdef WMBT_CRC32C_X86
// ---------------------------------------------------------------------------------------------
// SSE4.2: three interleaved streams.
//
// Why three: crc32q has a latency of 3 cycles but a throughput of 1 per cycle, so one dependent
// chain leaves the unit idle two cycles out of three. Three independent chains keep it busy.
//
// Why it is correct: the register update is linear over GF(2) in (register, data). For adjacent
// segments A, B of L bytes each,
//     Reg(r, A || B) = Reg(r, A) * x^(8L)  XOR  Reg(0, B)       (all mod P)
// because feeding B to Reg(r, A) is feeding B to 0 plus feeding L zero bytes to Reg(r, A).
// So a block A || B || C is processed as three chains started at r, 0 and 0 respectively, then
//     Reg(r, A||B||C) = ((c0 * x^(8L)) ^ c1) * x^(8L) ^ c2.
// "Multiply by x^(8L) mod P" is itself linear in the register, so it is four table lookups: one
// 256-entry table per register byte, entry = (byte << 8k) * x^(8L) mod P, built at compile time.
//
// Two block sizes: long blocks amortise the two shifts over 3 * 8 KiB; short blocks let medium
// inputs (from 768 bytes) use the three chains too. The tail is one chain.

constexpr size_t kLongBytes = 8192;  // per stream
constexpr size_t kShortBytes = 256;  // per stream
static_assert(kLongBytes % 8 == 0 && kShortBytes % 8 == 0, "streams advance 8 bytes per step");

using ShiftTables = std::array<std::array<uint32_t, 256>, 4>;

constexpr ShiftTables MakeShiftTables(size_t bytes) {
  const uint32_t op = XPowModP(8 * static_cast<uint64_t>(bytes));
  ShiftTables t{};
  for (uint32_t k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = MultModP(op, b << (8 * k));
  }
  return t;
}

constexpr ShiftTables kShiftLong = MakeShiftTables(kLongBytes);
constexpr ShiftTables kShiftShort = MakeShiftTables(kShortBytes);

// reg * x^(8L) mod P for the L the tables were built for.
inline uint32_t Shift(const ShiftTables& t, uint32_t reg) {
  return t[0][reg & 0xff] ^ t[1][(reg >> 8) & 0xff] ^ t[2][(reg >> 16) & 0xff] ^ t[3][reg >> 24];
}

inline uint64_t Load64(const uint8_t* p) {  // x86-64 is little-endian; memcpy: no alignment UB
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Consumes one block of 3 * kStream bytes starting at *p and returns the new register.
template <size_t kStream>
__attribute__((target("sse4.2"))) inline uint32_t ThreeStreams(uint32_t reg, const uint8_t* p,
                                                               const ShiftTables& shift) {
  uint64_t c0 = reg, c1 = 0, c2 = 0;
  for (size_t i = 0; i < kStream; i += 8) {
    c0 = _mm_crc32_u64(c0, Load64(p + i));
    c1 = _mm_crc32_u64(c1, Load64(p + kStream + i));
    c2 = _mm_crc32_u64(c2, Load64(p + 2 * kStream + i));
  }
  uint32_t r = Shift(shift, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
  return Shift(shift, r) ^ static_cast<uint32_t>(c2);
}

__attribute__((target("sse4.2"))) uint32_t RegisterSse42(uint32_t reg, const uint8_t* p,
                                                         size_t n) {
  // Align to 8 so the 64-bit loads below never straddle a cache line needlessly.
  while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    reg = _mm_crc32_u8(reg, *p);
    ++p;
    --n;
  }
  while (n >= 3 * kLongBytes) {
    reg = ThreeStreams<kLongBytes>(reg, p, kShiftLong);
    p += 3 * kLongBytes;
    n -= 3 * kLongBytes;
  }
  while (n >= 3 * kShortBytes) {
    reg = ThreeStreams<kShortBytes>(reg, p, kShiftShort);
    p += 3 * kShortBytes;
    n -= 3 * kShortBytes;
  }
  uint64_t c = reg;
  while (n >= 8) {
    c = _mm_crc32_u64(c, Load64(p));
    p += 8;
    n -= 8;
  }
  reg = static_cast<uint32_t>(c);
  while (n != 0) {
    reg = _mm_crc32_u8(reg, *p);
    ++p;
    --n;
  }
  return reg;
}

// ---------------------------------------------------------------------------------------------
// Folding with carry-less multiplication.
//
// Why it is correct: a 16-byte block X followed by more bytes is, as a polynomial, X * x^d plus
// the rest, where d is the number of bits after X; only X * x^d mod P matters. X's first 8
// bytes (the low 64 bits of a little-endian load) are its high-degree half Hi, its last 8 the
// low half Lo: X * x^d = Hi * x^(d+64) + Lo * x^d. A carry-less multiply of two reflected
// operands, one a 64-bit half (bit i = x^(63-i)) and one a 32-bit constant (bit j = x^(31-j)),
// gives bit k = x^(94-k) of the product; read as a reflected 128-bit block (bit k = x^(127-k))
// that is the product times x^33. So with the constants x^(d+31) and x^(d-33) mod P, the two
// multiplies give a 128-bit block congruent to X * x^d, aligned with the block d bits later,
// and XORing it into that block moves X forward by d bits. The starting register enters as
// the first four bytes of the message (Reg(r, A) == Reg(0, A with r XORed into its first
// four bytes)), and Reg(0, B) of the last block B left is two `crc32` instructions.

// The two constants for folding a block forward by `bits`, as one 128-bit lane: `lo` for the
// lane's low 64 bits (the block's first 8 bytes, its high-degree half), `hi` for its high 64.
struct FoldConstants {
  uint64_t lo, hi;
};
constexpr FoldConstants FoldBy(uint64_t bits) {
  return {XPowModP(bits + 31), XPowModP(bits - 33)};
}

// Distances used below, computed at compile time (a call of FoldBy at run time costs thousands
// of steps).
constexpr FoldConstants kFold2048 = FoldBy(2048);
constexpr FoldConstants kFold512 = FoldBy(512);
constexpr FoldConstants kFold384 = FoldBy(384);
constexpr FoldConstants kFold256 = FoldBy(256);
constexpr FoldConstants kFold128 = FoldBy(128);

constexpr size_t kFoldMinBytes = 256;  // four 512-bit registers

#define WMBT_FOLD_TARGET __attribute__((target("sse4.2,pclmul,avx512f,avx512vl,vpclmulqdq")))

WMBT_FOLD_TARGET inline __m128i Fold128(__m128i x, FoldConstants k) {
  const __m128i kk = _mm_set_epi64x(static_cast<int64_t>(k.hi), static_cast<int64_t>(k.lo));
  return _mm_xor_si128(_mm_clmulepi64_si128(x, kk, 0x00), _mm_clmulepi64_si128(x, kk, 0x11));
}

// Folds each of the four 128-bit lanes of `x` forward by the same distance.
WMBT_FOLD_TARGET inline __m512i Fold512(__m512i x, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                          _mm512_clmulepi64_epi128(x, k, 0x11));
}

WMBT_FOLD_TARGET inline __m512i Lanes(FoldConstants k) {
  const auto lo = static_cast<int64_t>(k.lo), hi = static_cast<int64_t>(k.hi);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

// REQUIRES: n >= kFoldMinBytes.
WMBT_FOLD_TARGET uint32_t RegisterFolding(uint32_t reg, const uint8_t* p, size_t n) {
  // Four registers of four blocks each hold the state of the last 256 bytes read.
  __m512i x0 = _mm512_loadu_si512(p);
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  x0 = _mm512_xor_si512(x0, _mm512_castsi128_si512(_mm_cvtsi32_si128(static_cast<int>(reg))));
  p += 256;
  n -= 256;
  const __m512i by2048 = Lanes(kFold2048);
  while (n >= 256) {
    x0 = _mm512_xor_si512(Fold512(x0, by2048), _mm512_loadu_si512(p));
    x1 = _mm512_xor_si512(Fold512(x1, by2048), _mm512_loadu_si512(p + 64));
    x2 = _mm512_xor_si512(Fold512(x2, by2048), _mm512_loadu_si512(p + 128));
    x3 = _mm512_xor_si512(Fold512(x3, by2048), _mm512_loadu_si512(p + 192));
    p += 256;
    n -= 256;
  }
  // Into one register, then 64 bytes at a time.
  const __m512i by512 = Lanes(kFold512);
  x1 = _mm512_xor_si512(Fold512(x0, by512), x1);
  x2 = _mm512_xor_si512(Fold512(x1, by512), x2);
  x3 = _mm512_xor_si512(Fold512(x2, by512), x3);
  while (n >= 64) {
    x3 = _mm512_xor_si512(Fold512(x3, by512), _mm512_loadu_si512(p));
    p += 64;
    n -= 64;
  }
  // Its four blocks into one, then 16 bytes at a time. (Stored and reloaded: GCC 12 warns
  // about _mm512_extracti32x4_epi32's own undefined operand.)
  alignas(64) __m128i block[4];
  _mm512_store_si512(block, x3);
  __m128i x = _mm_xor_si128(Fold128(block[0], kFold384), Fold128(block[1], kFold256));
  x = _mm_xor_si128(x, _mm_xor_si128(Fold128(block[2], kFold128), block[3]));
  while (n >= 16) {
    const __m128i next = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    x = _mm_xor_si128(Fold128(x, kFold128), next);
    p += 16;
    n -= 16;
  }
  uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(x)));
  c = _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(x, 1)));
  return RegisterSse42(static_cast<uint32_t>(c), p, n);
}

bool DetectSse42() {
  // Explicit init: this may run from another translation unit's static initialiser, before
  // libgcc's own constructor has filled in the CPU model.
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}

bool DetectFolding() {
  __builtin_cpu_init();  // as DetectSse42; libgcc also checks that the OS saves AVX-512 state
  return DetectSse42() && __builtin_cpu_supports("pclmul") &&
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("vpclmulqdq");
}

// Function-local statics: initialised once, thread-safely, on first use (whatever the static
// initialisation order).
bool HardwareAvailable() {
  static const bool available = DetectSse42();
  return available;
}

bool FoldingAvailable() {
  static const bool available = DetectFolding();
  return available;
}
#else
bool HardwareAvailable() { return false; }
bool FoldingAvailable() { return false; }
#endif  // WMBT_CRC32C_X86

}  // namespace

uint32_t Crc32cAppendPortable(uint32_t crc, const uint8_t* data, size_t n) {
  return ~RegisterPortable(~crc, data, n);
}

uint32_t Crc32cAppend(uint32_t crc, const uint8_t* data, size_t n) {
#ifdef WMBT_CRC32C_X86
  if (n >= kFoldMinBytes && FoldingAvailable()) return ~RegisterFolding(~crc, data, n);
  if (HardwareAvailable()) return ~RegisterSse42(~crc, data, n);
#endif
  return ~RegisterPortable(~crc, data, n);
}

bool Crc32cHardwareAvailable() { return HardwareAvailable(); }
bool Crc32cFoldingAvailable() { return FoldingAvailable(); }

uint32_t Crc32cAppendInstruction(uint32_t crc, const uint8_t* data, size_t n) {
#ifdef WMBT_CRC32C_X86
  WMBT_CHECK(HardwareAvailable());
  return ~RegisterSse42(~crc, data, n);
#else
  WMBT_CHECK_MSG(false, "no crc32 instruction on this architecture");
  return crc;
#endif
}

uint32_t Crc32cAppendFolding(uint32_t crc, const uint8_t* data, size_t n) {
#ifdef WMBT_CRC32C_X86
  WMBT_CHECK(FoldingAvailable());
  if (n < kFoldMinBytes) return ~RegisterSse42(~crc, data, n);
  return ~RegisterFolding(~crc, data, n);
#else
  WMBT_CHECK_MSG(false, "no folding CRC32C on this architecture");
  return crc;
#endif
}

// kXPow2[k] = x^(2^k) mod P, so x^n is one product per set bit of n (no squarings at run time:
// the daemon combines a CRC per large payload it sends, and block sizes are powers of two).
constexpr std::array<uint32_t, 64> MakeXPow2Table() {
  std::array<uint32_t, 64> t{};
  t[0] = 0x40000000u;  // x^1
  for (size_t k = 1; k < t.size(); ++k) t[k] = MultModP(t[k - 1], t[k - 1]);
  return t;
}
constexpr std::array<uint32_t, 64> kXPow2 = MakeXPow2Table();

// Appending B to A multiplies A's register by x^(8|B|) and adds B's from a zero register; the
// inversions on entry and exit cancel out of the sum (linearity), leaving crc_a * x^(8|B|) ^ crc_b.
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  uint32_t shift = 0x80000000u;  // x^0
  uint64_t bits = 8 * len_b;
  for (size_t k = 0; bits != 0; ++k, bits >>= 1) {
    if (bits & 1) shift = MultModP(shift, kXPow2[k]);
  }
  return MultModP(shift, crc_a) ^ crc_b;
}

}  // namespace wombatkv
