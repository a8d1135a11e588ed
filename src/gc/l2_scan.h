// L2 scanning: list every object under an L2 prefix and sort it by the layout (docs/layout.md §1),
// one namespace at a time; read and check chain heads. Orphan GC (orphan_gc.h) and the audit
// (src/audit/) are built on it.
//
// A key is, after "<prefix>/<ns>/wombatkv/v1/" with <ns> a valid namespace:
//   blob/<40 hex>                 a blob        (ListedBlob)
//   chain/<24 hex>/<64 hex>       a chain head  (ListedHead)
//   sidecar/<24 hex>/<64 hex>     a sidecar     (ListedSidecar)
// in canonical (lowercase) form. Anything else under "<prefix>/" is a stray: a key outside the
// layout, which no reader ever reads (uppercase hex included: readers build lowercase names).
//
// Memory: ScanL2 holds one namespace's listing at a time (about 100 bytes per object).
// Thread-safety: the functions are reentrant; callbacks run on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "layout/chain_head.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::gc {

struct ListedHead {
  ObjectInfo info;  // info.key is the full key
  Fingerprint fp;
  ChainId chain_id;
};

struct ListedBlob {
  ObjectInfo info;
  ContentHash hash;
};

struct ListedSidecar {
  ObjectInfo info;
  Fingerprint fp;
  BlockKey tip;
};

// Everything listed under "<prefix>/<segment>/". If the segment is not a valid namespace, every
// key under it is a stray and `ns_valid` is false.
struct NamespaceListing {
  std::string ns;  // the segment
  bool ns_valid = true;
  std::vector<ListedHead> heads;  // in key order (so by fingerprint, then chain id)
  std::vector<ListedBlob> blobs;  // in key order
  std::vector<ListedSidecar> sidecars;
  std::vector<ObjectInfo> strays;
};

struct ScanProgress {
  uint64_t keys_listed = 0;
  uint64_t namespaces_done = 0;
  std::string_view ns;  // being listed
};
using ScanProgressFn = std::function<void(const ScanProgress&)>;

// Lists "<prefix>/" and calls `on_namespace` once per top-level segment (in byte order) with its
// complete listing, and `on_stray` for each object directly under "<prefix>/". A callback error
// stops the scan and is returned. `progress` (optional) is called after every listed page.
// REQUIRES: prefix passed layout::ValidateL2Prefix.
Status ScanL2(ObjectStore* l2, std::string_view prefix,
              const std::function<Status(NamespaceListing&&)>& on_namespace,
              const std::function<void(const ObjectInfo&)>& on_stray,
              const ScanProgressFn& progress = {});

// Lists one namespace ("<prefix>/<ns>/"). REQUIRES: ns is a valid namespace.
Result<NamespaceListing> ListNamespace(ObjectStore* l2, std::string_view prefix,
                                       std::string_view ns, const ScanProgressFn& progress = {});

// The valid namespaces that have at least one object under "<prefix>/", in byte order.
Result<std::vector<std::string>> ListNamespaces(ObjectStore* l2, std::string_view prefix);

// Lists only the heads of a namespace ("<prefix>/<ns>/wombatkv/v1/chain/"); keys that do not
// parse are left out (ListNamespace reports them as strays).
Result<std::vector<ListedHead>> ListHeads(ObjectStore* l2, std::string_view prefix,
                                          std::string_view ns);

// A chain head as read from L2.
struct HeadRead {
  enum class State : uint8_t {
    kOk,           // decoded, and its namespace, fingerprint and chain id match its key
    kGone,         // deleted since it was listed
    kUnreadable,   // does not decode (size, framing, CRC): its references are unknown
    kOtherChain,   // decodes, but describes another chain than its key names
  };
  State state = State::kOk;
  std::string etag;                       // of the version read
  std::optional<layout::ChainHead> head;  // kOk and kOtherChain
  Status error;                           // why, for kUnreadable / kOtherChain
};

// Reads and checks each head. On `executor` (optional) the reads run in parallel, at most
// `parallel_max` at a time. Only L2 errors other than NotFound fail the call.
Result<std::vector<HeadRead>> ReadHeads(ObjectStore* l2, std::string_view ns,
                                        const std::vector<ListedHead>& heads, Executor* executor,
                                        size_t parallel_max = 32);

}  // namespace wombatkv::gc
