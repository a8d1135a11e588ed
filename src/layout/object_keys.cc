#include "layout/object_keys.h"

#include "object/object_key.h"

namespace wombatkv::layout {
namespace {
constexpr std::string_view kVersionDir = "/wombatkv/v1/";
}

Status ValidateL2Prefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() > 256) {
    return Status::InvalidArgument("L2 prefix \"" + std::string(prefix) +
                                   "\" must be 1..256 characters (WMBT_KV_S3_PREFIX)");
  }
  size_t start = 0;
  while (start <= prefix.size()) {
    size_t end = prefix.find('/', start);
    if (end == std::string_view::npos) end = prefix.size();
    std::string_view seg = prefix.substr(start, end - start);
    // Object key segments, up to 255 bytes (a file name in the local-directory L2).
    if (seg.size() > 255 || !IsValidKeySegment(seg)) {
      return Status::InvalidArgument("L2 prefix \"" + std::string(prefix) +
                                     "\" has a bad segment \"" + std::string(seg) +
                                     "\": use [A-Za-z0-9._-] segments separated by '/'");
    }
    start = end + 1;
  }
  return Status::Ok();
}

std::string NamespacesPrefix(std::string_view prefix) { return std::string(prefix) + "/"; }

std::string NamespaceRoot(std::string_view prefix, std::string_view ns) {
  std::string out(prefix);
  out += '/';
  out += ns;
  out += kVersionDir;
  return out;
}

std::string BlobKey(std::string_view prefix, std::string_view ns, const ContentHash& hash) {
  return NamespaceRoot(prefix, ns) + "blob/" + hash.ToHex();
}

std::string ChainsPrefix(std::string_view prefix, std::string_view ns) {
  return NamespaceRoot(prefix, ns) + "chain/";
}

std::string ChainKey(std::string_view prefix, std::string_view ns, const Fingerprint& fp,
                     const ChainId& chain_id) {
  return ChainsPrefix(prefix, ns) + fp.ToHex() + "/" + chain_id.ToHex();
}

std::string SidecarKey(std::string_view prefix, std::string_view ns, const Fingerprint& fp,
                       const BlockKey& tip) {
  return NamespaceRoot(prefix, ns) + "sidecar/" + fp.ToHex() + "/" + tip.ToHex();
}

std::string BlobsPrefix(std::string_view prefix, std::string_view ns) {
  return NamespaceRoot(prefix, ns) + "blob/";
}

std::string SidecarsPrefix(std::string_view prefix, std::string_view ns) {
  return NamespaceRoot(prefix, ns) + "sidecar/";
}

std::string EvictLeaseKey(std::string_view prefix, std::string_view ns) {
  return NamespaceRoot(prefix, ns) + "lease/evict";
}

namespace {
// "<dir><fp hex>/<64 hex>" after `dir`, as heads and sidecars are named.
std::optional<std::pair<Fingerprint, BlockKey>> ParseFpAndKey(std::string_view dir,
                                                              std::string_view key) {
  if (key.substr(0, dir.size()) != dir) return std::nullopt;
  std::string_view rest = key.substr(dir.size());
  if (rest.size() != Fingerprint::kHexSize + 1 + BlockKey::kHexSize) return std::nullopt;
  if (rest[Fingerprint::kHexSize] != '/') return std::nullopt;
  auto fp = Fingerprint::FromHex(rest.substr(0, Fingerprint::kHexSize));
  auto k = BlockKey::FromHex(rest.substr(Fingerprint::kHexSize + 1));
  if (!fp.ok() || !k.ok()) return std::nullopt;
  return std::make_pair(*fp, *k);
}
}  // namespace

std::optional<ChainName> ParseChainKey(std::string_view chains_prefix, std::string_view key) {
  auto parsed = ParseFpAndKey(chains_prefix, key);
  if (!parsed) return std::nullopt;
  return ChainName{parsed->first, parsed->second};
}

std::optional<ContentHash> ParseBlobKey(std::string_view blobs_prefix, std::string_view key) {
  if (key.substr(0, blobs_prefix.size()) != blobs_prefix) return std::nullopt;
  std::string_view rest = key.substr(blobs_prefix.size());
  if (rest.size() != ContentHash::kHexSize) return std::nullopt;
  auto hash = ContentHash::FromHex(rest);
  if (!hash.ok()) return std::nullopt;
  return *hash;
}

std::optional<SidecarName> ParseSidecarKey(std::string_view sidecars_prefix,
                                           std::string_view key) {
  auto parsed = ParseFpAndKey(sidecars_prefix, key);
  if (!parsed) return std::nullopt;
  return SidecarName{parsed->first, parsed->second};
}

std::optional<std::string> ParseNamespaceDir(std::string_view prefix, std::string_view dir) {
  std::string head = NamespacesPrefix(prefix);
  if (dir.size() < head.size() + 2 || dir.substr(0, head.size()) != head || dir.back() != '/') {
    return std::nullopt;
  }
  std::string_view ns = dir.substr(head.size(), dir.size() - head.size() - 1);
  if (!ValidateNamespace(ns).ok()) return std::nullopt;
  return std::string(ns);
}

}  // namespace wombatkv::layout
