// Shared helpers of the libFuzzer targets (docs/fuzzing.md).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

// A violated property: print where and what, then abort so libFuzzer saves the input as a crash.
#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n", __FILE__, __LINE__, \
                   #cond);                                                             \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace wombatkv::fuzz {

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

inline bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '_' || c == '-';
}

// Independent restatement of the namespace rule: [A-Za-z0-9._-]{1,64}, not "." or "..".
inline bool OracleNamespace(std::string_view ns) {
  if (ns.empty() || ns.size() > 64 || ns == "." || ns == "..") return false;
  for (char c : ns)
    if (!IsKeyChar(c)) return false;
  return true;
}

// A string over the key alphabet (plus, rarely, '/' and other bytes) of at most `max` bytes.
inline std::string KeyishString(FuzzedDataProvider& in, size_t max) {
  static constexpr char kAlphabet[] =
      "abcdefABCDEF0123456789._-/xyzXYZ";  // '/' and '.' often, to reach the edge cases
  const size_t n = in.ConsumeIntegralInRange<size_t>(0, max);
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n && in.remaining_bytes() > 0; ++i) {
    uint8_t b = in.ConsumeIntegral<uint8_t>();
    out += b < 0xf0 ? kAlphabet[b % (sizeof kAlphabet - 1)] : static_cast<char>(b - 0xf0);
  }
  return out;
}

}  // namespace wombatkv::fuzz
