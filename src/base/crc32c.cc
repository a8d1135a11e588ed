// CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
//
// Two implementations behind one dispatch:
//   * Portable: slicing-by-8 tables, runs anywhere.
//   * x86-64 SSE4.2: the `crc32` instruction, with large inputs split into three interleaved
//     streams. Only the functions marked target("sse4.2") use the instruction, and they are only
//     called after a runtime CPU check, so the library still runs on CPUs without SSE4.2.
//
// Vocabulary used below. The "register" is the un-inverted CRC state; the public, finalised value
// is ~register (Crc32cAppend inverts on entry and on exit, which is why Crc32cAppend(0, D) ==
// Crc32c(D) and appending in pieces composes). In the reflected convention bit 31 of a 32-bit
// word is the coefficient of x^0 and bit 0 the coefficient of x^31. Feeding one zero bit to the
// register multiplies it by x modulo P, so feeding n zero bytes multiplies it by x^(8n) mod P.
#include "base/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WMBT_CRC32C_X86 1
#include <nmmintrin.h>
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

bool DetectSse42() {
  // Explicit init: this may run from another translation unit's static initialiser, before
  // libgcc's own constructor has filled in the CPU model.
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}

// Function-local static: initialised once, thread-safely, on first use (whatever the static
// initialisation order).
bool HardwareAvailable() {
  static const bool available = DetectSse42();
  return available;
}
#else
bool HardwareAvailable() { return false; }
#endif  // WMBT_CRC32C_X86

}  // namespace

uint32_t Crc32cAppendPortable(uint32_t crc, const uint8_t* data, size_t n) {
  return ~RegisterPortable(~crc, data, n);
}

uint32_t Crc32cAppend(uint32_t crc, const uint8_t* data, size_t n) {
#ifdef WMBT_CRC32C_X86
  if (HardwareAvailable()) return ~RegisterSse42(~crc, data, n);
#endif
  return ~RegisterPortable(~crc, data, n);
}

bool Crc32cHardwareAvailable() { return HardwareAvailable(); }

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
