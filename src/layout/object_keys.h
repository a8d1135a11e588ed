// Names of objects in L2 (docs/layout.md is the contract):
//   <prefix>/<ns>/wombatkv/v1/blob/<40-hex content hash>
//   <prefix>/<ns>/wombatkv/v1/chain/<24-hex fingerprint>/<64-hex chain id>
//   <prefix>/<ns>/wombatkv/v1/sidecar/<24-hex fingerprint>/<64-hex tip key>
//   <prefix>/<ns>/wombatkv/v1/lease/evict    (the namespace's eviction lease, docs/capacity.md)
// REQUIRES for builders: the namespace has been validated (ValidateNamespace) and the prefix by
// ValidateL2Prefix, so a name can never escape its directory.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::layout {

// A prefix is one or more key segments ("kv", "team/kv"); no leading/trailing '/'.
Status ValidateL2Prefix(std::string_view prefix);

std::string NamespacesPrefix(std::string_view prefix);  // "<prefix>/"
std::string NamespaceRoot(std::string_view prefix, std::string_view ns);  // ".../v1/"
std::string BlobKey(std::string_view prefix, std::string_view ns, const ContentHash& hash);
std::string ChainsPrefix(std::string_view prefix, std::string_view ns);  // ".../v1/chain/"
std::string ChainKey(std::string_view prefix, std::string_view ns, const Fingerprint& fp,
                     const ChainId& chain_id);
std::string SidecarKey(std::string_view prefix, std::string_view ns, const Fingerprint& fp,
                       const BlockKey& tip);
std::string BlobsPrefix(std::string_view prefix, std::string_view ns);     // ".../v1/blob/"
std::string SidecarsPrefix(std::string_view prefix, std::string_view ns);  // ".../v1/sidecar/"
std::string EvictLeaseKey(std::string_view prefix, std::string_view ns);   // ".../v1/lease/evict"

// Parses "<chains prefix><fp hex>/<chain hex>"; nullopt for anything else.
struct ChainName {
  Fingerprint fp;
  ChainId chain_id;
};
std::optional<ChainName> ParseChainKey(std::string_view chains_prefix, std::string_view key);

// Parses "<blobs prefix><40 hex>"; nullopt for anything else. Like ParseChainKey it accepts
// either case: callers that need the canonical (lowercase) name compare with BlobKey.
std::optional<ContentHash> ParseBlobKey(std::string_view blobs_prefix, std::string_view key);

// Parses "<sidecars prefix><fp hex>/<tip hex>"; nullopt for anything else.
struct SidecarName {
  Fingerprint fp;
  BlockKey tip;
};
std::optional<SidecarName> ParseSidecarKey(std::string_view sidecars_prefix, std::string_view key);

// From a common prefix "<prefix>/<ns>/" of a delimited listing, the namespace; nullopt if the
// segment is not a valid namespace.
std::optional<std::string> ParseNamespaceDir(std::string_view prefix, std::string_view dir);

}  // namespace wombatkv::layout
