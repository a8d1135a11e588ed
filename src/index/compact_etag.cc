#include "index/compact_etag.h"

#include <charconv>
#include <cstring>

namespace wombatkv {
namespace {

enum Form : uint8_t { kRaw = 0, kHex = 1, kGroups = 2 };
constexpr size_t kBody = CompactEtag::kBytes - 2;  // after the form and its one header byte
constexpr size_t kPrefixMax = 3;
constexpr size_t kGroupsMax = 63;
constexpr uint8_t kQuoted = 0x80;  // kHex: the digits were between double quotes

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool PackHex(std::string_view s, uint8_t* out) {
  const bool quoted = s.size() >= 2 && s.front() == '"' && s.back() == '"';
  if (quoted) s = s.substr(1, s.size() - 2);
  if (s.empty() || s.size() % 2 != 0 || s.size() / 2 > kBody) return false;
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = HexValue(s[i]);
    const int lo = HexValue(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[2 + i / 2] = static_cast<uint8_t>(hi << 4 | lo);
  }
  out[1] = static_cast<uint8_t>(s.size() | (quoted ? kQuoted : 0));
  return true;
}

// Prefix, then one varint per '-'-separated hex number. Lenient: a form that does not decode to
// the same string (leading zeros, an empty group) is caught by Encode's round trip.
bool PackGroups(std::string_view s, uint8_t* out) {
  size_t prefix = 0;
  while (prefix < s.size() && prefix < kPrefixMax && s[prefix] >= 'g' && s[prefix] <= 'z') {
    ++prefix;
  }
  size_t at = 2 + prefix;
  if (at > CompactEtag::kBytes) return false;
  std::memcpy(out + 2, s.data(), prefix);
  size_t groups = 0;
  for (size_t pos = prefix; pos <= s.size();) {
    size_t end = s.find('-', pos);
    if (end == s.npos) end = s.size();
    uint64_t v = 0;
    const auto r = std::from_chars(s.data() + pos, s.data() + end, v, 16);
    if (end == pos || r.ec != std::errc() || r.ptr != s.data() + end) return false;
    do {
      if (at == CompactEtag::kBytes) return false;
      out[at++] = static_cast<uint8_t>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
      v >>= 7;
    } while (v != 0);
    if (++groups > kGroupsMax) return false;
    pos = end + 1;
  }
  out[1] = static_cast<uint8_t>(prefix | groups << 2);
  return true;
}

bool PackRaw(std::string_view s, uint8_t* out) {
  if (s.size() > kBody) return false;
  out[1] = static_cast<uint8_t>(s.size());
  std::memcpy(out + 2, s.data(), s.size());
  return true;
}

void AppendHex(uint64_t v, std::string* out) {
  char buf[16];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  out->append(buf, r.ptr);
}

}  // namespace

std::optional<CompactEtag> CompactEtag::Encode(std::string_view etag) {
  using Pack = bool (*)(std::string_view, uint8_t*);
  constexpr std::pair<Form, Pack> kForms[] = {{kHex, PackHex}, {kGroups, PackGroups},
                                             {kRaw, PackRaw}};
  for (const auto& [form, pack] : kForms) {
    CompactEtag c;
    c.b_[0] = form;
    if (pack(etag, c.b_.data()) && c.Decode() == etag) return c;
  }
  return std::nullopt;
}

CompactEtag CompactEtag::Spilled(uint32_t index) {
  CompactEtag c;
  c.b_[0] = kSpilledForm;
  std::memcpy(c.b_.data() + 1, &index, sizeof index);
  return c;
}

uint32_t CompactEtag::spill_index() const {
  uint32_t index;
  std::memcpy(&index, b_.data() + 1, sizeof index);
  return index;
}

std::string CompactEtag::Decode() const {
  std::string out;
  const uint8_t* p = b_.data() + 2;
  switch (b_[0]) {
    case kRaw:
      out.assign(reinterpret_cast<const char*>(p), b_[1]);
      break;
    case kHex:
      if (b_[1] & kQuoted) out += '"';
      for (size_t i = 0; i < (b_[1] & ~kQuoted); ++i) {
        out += "0123456789abcdef"[i % 2 == 0 ? p[i / 2] >> 4 : p[i / 2] & 0xf];
      }
      if (b_[1] & kQuoted) out += '"';
      break;
    case kGroups: {
      const size_t prefix = b_[1] & 3;
      out.assign(reinterpret_cast<const char*>(p), prefix);
      const uint8_t* end = b_.data() + kBytes;
      p += prefix;
      for (size_t g = 0; g < size_t{b_[1]} >> 2; ++g) {
        uint64_t v = 0;
        for (int shift = 0; p < end && shift < 64; shift += 7) {
          const uint8_t byte = *p++;
          v |= uint64_t{byte & 0x7fu} << shift;
          if ((byte & 0x80) == 0) break;
        }
        if (g > 0) out += '-';
        AppendHex(v, &out);
      }
      break;
    }
    default:
      break;  // spilled: the caller's
  }
  return out;
}

}  // namespace wombatkv
