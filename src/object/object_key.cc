// Object key validation: the one check that keeps untrusted names from becoming paths.
#include "object/object_key.h"

#include <array>
#include <charconv>

#include "base/limits.h"
#include "base/quoted.h"

namespace wombatkv {
namespace {

// [A-Za-z0-9._-], by table: every put checks every character of its key.
constexpr std::array<bool, 256> kKeyChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  }
  return t;
}();

bool IsKeyChar(char c) { return kKeyChars[static_cast<unsigned char>(c)]; }

Status BadKey(std::string_view what, std::string_view name, std::string_view why) {
  return Status::InvalidArgument(std::string(what) + " " + Quoted(name) + " " + std::string(why) +
                                 " (keys are '/'-separated [A-Za-z0-9._-] segments, none \".\" "
                                 "or \"..\", at most 1024 bytes)");
}

// Checks the segments of `name` split at '/', the last one only for its characters if
// `last_is_partial`. Returns the reason it is invalid, or empty.
std::string_view SegmentProblem(std::string_view name, bool last_is_partial) {
  size_t start = 0;
  for (;;) {
    size_t slash = name.find('/', start);
    const bool last = slash == std::string_view::npos;
    std::string_view seg = name.substr(start, last ? std::string_view::npos : slash - start);
    if (last && last_is_partial) {
      for (char c : seg) {
        if (!IsKeyChar(c)) return "contains a character outside the key alphabet";
      }
      return {};
    }
    if (seg.empty()) return start == 0 ? "starts with '/' or is empty" : "has an empty segment";
    if (!IsValidKeySegment(seg)) {
      return (seg == "." || seg == "..") ? "has a \".\" or \"..\" segment"
                                         : "contains a character outside the key alphabet";
    }
    if (last) return {};
    start = slash + 1;
  }
}

}  // namespace

std::string HexEtag(std::string_view prefix, uint64_t a, uint64_t b, uint64_t c) {
  std::string out(prefix);
  char buf[16];
  for (uint64_t v : {a, b, c}) {
    if (out.size() > prefix.size()) out += '-';
    auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
    out.append(buf, r.ptr);
  }
  return out;
}

bool IsValidKeySegment(std::string_view segment) {
  if (segment.empty() || segment == "." || segment == "..") return false;
  for (char c : segment) {
    if (!IsKeyChar(c)) return false;
  }
  return true;
}

Status ValidateObjectKey(std::string_view key) {
  if (key.size() > kObjectKeyBytesMax) return BadKey("object key", key, "is longer than 1024 bytes");
  std::string_view problem = SegmentProblem(key, /*last_is_partial=*/false);
  if (!problem.empty()) return BadKey("object key", key, problem);
  return Status::Ok();
}

Status ValidateListPrefix(std::string_view prefix) {
  if (prefix.size() > kObjectKeyBytesMax) {
    return BadKey("list prefix", prefix, "is longer than 1024 bytes");
  }
  if (prefix.empty()) return Status::Ok();
  if (prefix.front() == '/') return BadKey("list prefix", prefix, "starts with '/'");
  std::string_view problem = SegmentProblem(prefix, /*last_is_partial=*/true);
  if (!problem.empty()) return BadKey("list prefix", prefix, problem);
  return Status::Ok();
}

Result<size_t> CheckListArgs(std::string_view prefix, std::string_view delimiter,
                             size_t max_keys) {
  WMBT_RETURN_IF_ERROR(ValidateListPrefix(prefix));
  if (!delimiter.empty() && delimiter != "/") {
    return Status::InvalidArgument("list delimiter " + Quoted(delimiter) +
                                   " is not supported (only \"/\" or none)");
  }
  if (max_keys == 0) return Status::InvalidArgument("list max_keys must be at least 1");
  return max_keys < limits::kListPageKeysMax ? max_keys : limits::kListPageKeysMax;
}

}  // namespace wombatkv
