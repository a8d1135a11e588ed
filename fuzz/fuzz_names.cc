// Fuzzes the parsers of names: FixedBytes::FromHex (block keys, content hashes, fingerprints),
// ValidateNamespace, layout::ValidateL2Prefix / ParseChainKey / ParseNamespaceDir, and the object
// key and List rules (ValidateObjectKey, ValidateListPrefix, CheckListArgs, SkippedByToken).
//
// The first input byte picks the function; the rest is its input. Properties:
//   hex        FromHex succeeds iff the text is exactly 2N hex digits (either case), and then
//              ToHex() is the lowercase text; the three sizes agree with their lengths.
//   namespace  ValidateNamespace agrees with an independent statement of [A-Za-z0-9._-]{1,64}
//              minus "." and "..".
//   prefix     ValidateL2Prefix agrees with its rule; for a valid prefix and namespace every L2
//              name built from them (blob, chain, sidecar keys) is a valid object key that stays
//              under NamespaceRoot, so no name can escape its directory.
//   chain key  ParseChainKey accepts exactly ChainKey(prefix, ns, fp, id) (hex in either case) and
//              returns that fp and id; ChainKey → ParseChainKey round-trips.
//   ns dir     ParseNamespaceDir accepts exactly "<prefix>/<valid ns>/" and returns the ns.
//   object key ValidateObjectKey agrees with its rule; every prefix of a valid key is a valid List
//              prefix; ValidateListPrefix agrees with its rule; CheckListArgs clamps as documented.
//   tokens     SubtreeSkippedByToken(dir, t) implies SkippedByToken(k, t) for every k under dir.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "layout/object_keys.h"
#include "object/object_key.h"
#include "wombatkv/object_store.h"

using namespace wombatkv;
using wombatkv::fuzz::IsKeyChar;
using wombatkv::fuzz::KeyishString;
using wombatkv::fuzz::Lower;
using wombatkv::fuzz::OracleNamespace;

namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

template <typename T>
void CheckHex(std::string_view text) {
  auto r = T::FromHex(text);
  bool expect = text.size() == T::kHexSize;
  for (char c : text) expect = expect && IsHex(c);
  FUZZ_CHECK(r.ok() == expect);
  if (r.ok()) {
    FUZZ_CHECK(r->ToHex() == Lower(text));
    auto again = T::FromHex(r->ToHex());
    FUZZ_CHECK(again.ok() && *again == *r);
  } else {
    FUZZ_CHECK(r.status().code() == Code::kInvalidArgument);
  }
}

bool ValidSegment(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s)
    if (!IsKeyChar(c)) return false;
  return true;
}

// Splits at '/', keeping empty segments.
std::vector<std::string_view> Split(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t slash = s.find('/', start);
    if (slash == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, slash - start));
    start = slash + 1;
  }
}

bool OracleL2Prefix(std::string_view p) {
  if (p.empty() || p.size() > 256) return false;
  for (std::string_view seg : Split(p))
    if (seg.size() > 255 || !ValidSegment(seg)) return false;
  return true;
}

bool OracleObjectKey(std::string_view k) {
  if (k.size() > kObjectKeyBytesMax) return false;
  for (std::string_view seg : Split(k))
    if (!ValidSegment(seg)) return false;
  return true;
}

bool OracleListPrefix(std::string_view p) {
  if (p.size() > kObjectKeyBytesMax) return false;
  if (p.empty()) return true;
  auto segs = Split(p);
  for (size_t i = 0; i + 1 < segs.size(); ++i)
    if (!ValidSegment(segs[i])) return false;
  for (char c : segs.back())
    if (!IsKeyChar(c)) return false;
  return true;
}

template <typename T>
T ConsumeFixed(FuzzedDataProvider& in) {
  T out;
  std::vector<uint8_t> b = in.ConsumeBytes<uint8_t>(T::kSize);
  b.resize(T::kSize);
  for (size_t i = 0; i < T::kSize; ++i) out.bytes[i] = b[i];
  return out;
}

void CheckL2Names(std::string_view prefix, std::string_view ns, FuzzedDataProvider& in) {
  const Fingerprint fp = ConsumeFixed<Fingerprint>(in);
  const ChainId id = ConsumeFixed<ChainId>(in);
  const ContentHash hash = ConsumeFixed<ContentHash>(in);
  const std::string root = layout::NamespaceRoot(prefix, ns);
  for (const std::string& key : {layout::BlobKey(prefix, ns, hash),
                                 layout::ChainKey(prefix, ns, fp, id),
                                 layout::SidecarKey(prefix, ns, fp, id)}) {
    FUZZ_CHECK(ValidateObjectKey(key).ok() == (key.size() <= kObjectKeyBytesMax));
    FUZZ_CHECK(key.starts_with(root));
  }
  auto parsed = layout::ParseChainKey(layout::ChainsPrefix(prefix, ns),
                                      layout::ChainKey(prefix, ns, fp, id));
  FUZZ_CHECK(parsed && parsed->fp == fp && parsed->chain_id == id);
  auto dir = layout::ParseNamespaceDir(prefix, layout::NamespacesPrefix(prefix) + std::string(ns) + "/");
  FUZZ_CHECK(dir && *dir == ns);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  switch (in.ConsumeIntegral<uint8_t>() % 7) {
    case 0: {  // hex
      const std::string text = in.ConsumeRemainingBytesAsString();
      CheckHex<BlockKey>(text);
      CheckHex<ContentHash>(text);
      CheckHex<Fingerprint>(text);
      break;
    }
    case 1: {  // namespace
      const std::string ns = in.ConsumeRemainingBytesAsString();
      Status st = ValidateNamespace(ns);
      FUZZ_CHECK(st.ok() == OracleNamespace(ns));
      if (!st.ok()) FUZZ_CHECK(st.code() == Code::kInvalidArgument);
      break;
    }
    case 2: {  // L2 prefix, and the names built under it
      const std::string prefix = in.ConsumeBool() ? in.ConsumeRandomLengthString(300)
                                                  : KeyishString(in, 300);
      const std::string ns = KeyishString(in, 70);
      Status st = layout::ValidateL2Prefix(prefix);
      FUZZ_CHECK(st.ok() == OracleL2Prefix(prefix));
      if (st.ok()) {
        FUZZ_CHECK(ValidateObjectKey(prefix).ok());
        FUZZ_CHECK(ValidateListPrefix(prefix).ok());
        if (ValidateNamespace(ns).ok()) CheckL2Names(prefix, ns, in);
      }
      break;
    }
    case 3: {  // chain key parsing
      const std::string prefix = KeyishString(in, 40);
      const std::string ns = KeyishString(in, 20);
      const std::string chains = layout::ChainsPrefix(prefix, ns);
      std::string key = in.ConsumeBool() ? chains : std::string();
      key += in.ConsumeRemainingBytesAsString();
      auto parsed = layout::ParseChainKey(chains, key);
      if (parsed) {
        FUZZ_CHECK(Lower(key) == Lower(layout::ChainKey(prefix, ns, parsed->fp, parsed->chain_id)));
        FUZZ_CHECK(key.starts_with(chains));
      }
      break;
    }
    case 4: {  // namespace directory of a delimited listing
      const std::string prefix = KeyishString(in, 40);
      std::string dir = in.ConsumeBool() ? layout::NamespacesPrefix(prefix) : std::string();
      dir += in.ConsumeRemainingBytesAsString();
      auto ns = layout::ParseNamespaceDir(prefix, dir);
      if (ns) {
        FUZZ_CHECK(OracleNamespace(*ns));
        FUZZ_CHECK(dir == layout::NamespacesPrefix(prefix) + *ns + "/");
      }
      break;
    }
    case 5: {  // object keys and List prefixes / arguments
      const size_t max_keys = in.ConsumeIntegralInRange<size_t>(0, 2000);
      const std::string delimiter = in.ConsumeRandomLengthString(3);
      const std::string key = in.ConsumeBool() ? in.ConsumeRemainingBytesAsString()
                                               : KeyishString(in, 1100);
      Status st = ValidateObjectKey(key);
      FUZZ_CHECK(st.ok() == OracleObjectKey(key));
      Status lp = ValidateListPrefix(key);
      FUZZ_CHECK(lp.ok() == OracleListPrefix(key));
      if (st.ok()) {
        FUZZ_CHECK(lp.ok());
        for (size_t cut = 0; cut <= key.size(); cut += 1 + key.size() / 16)
          FUZZ_CHECK(ValidateListPrefix(std::string_view(key).substr(0, cut)).ok());
      }
      auto page = CheckListArgs(key, delimiter, max_keys);
      FUZZ_CHECK(page.ok() == (lp.ok() && (delimiter.empty() || delimiter == "/") && max_keys > 0));
      if (page.ok()) FUZZ_CHECK(*page == std::min<size_t>(max_keys, 1000));
      break;
    }
    default: {  // continuation tokens
      std::string dir = KeyishString(in, 24);
      if (dir.empty() || dir.back() != '/') dir += '/';
      const std::string token = KeyishString(in, 32);
      const std::string suffix = KeyishString(in, 8);
      if (SubtreeSkippedByToken(dir, token)) {
        FUZZ_CHECK(SkippedByToken(dir, token));
        FUZZ_CHECK(SkippedByToken(dir + suffix, token));
      }
      if (!token.empty()) FUZZ_CHECK(SkippedByToken(token, token));
      FUZZ_CHECK(!SkippedByToken(dir, ""));
      break;
    }
  }
  return 0;
}
