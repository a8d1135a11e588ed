// The indexed prefix of a publish: the leading blocks of its chain it takes from L0, published
// before, whose blobs it does not upload. They are in L2 only while some head there names them:
// L0 may be stale (another host replaced the chain they came from, and orphan GC collected them),
// or that chain may be replaced while the publish runs. So a publish checks them twice:
//   before its head write (CheckIndexedPrefix): a head that names them as its leading entries,
//     read from L2 — the witness: a chain L0 has whose head L0 says is exactly that prefix, else
//     the chain an earlier fork from the prefix's last block wrote here (fork_hints_: a fork
//     from the middle of a chain has no chain of its own) — or else each blob, put back from
//     memory if it is gone; without the bytes the publish fails and L2 is unchanged;
//   after it (RecheckIndexedPrefix): the witness's ETag is the one read before (so that head
//     named the blobs from before the write until after it), or else each blob again.
// Why a head that names a blob throughout the write protects it: a collector deletes a blob only
// if no head named it when it listed the heads (R1), and puts it back if a head listed at its
// re-check names it (R3) — the witness before the head write, or this head after it. A witness
// written after that re-check was checked by its own writer, as this one is (R4). gc/orphan_gc.h
// has the rules; this store's own collector keeps the prefix from the start (KeepBlobs).
#include <algorithm>
#include <span>

#include "layout/object_keys.h"
#include "store/store_impl.h"

namespace wombatkv {

Status StoreImpl::CheckIndexedPrefix(std::string_view ns, const Fingerprint& fp, uint32_t ns_id,
                                     const ChainId& written, const std::vector<ChainEntry>& entries,
                                     IndexedPrefix* indexed) {
  if (indexed->length == 0) return Status::Ok();
  // The chain this publish writes is no witness: its own write replaces it.
  if (indexed->witness && *indexed->witness == written) indexed->witness.reset();
  if (indexed->witness) {
    auto now = ReadHead(ns, fp, *indexed->witness);
    const std::span<const ChainEntry> prefix(entries.data(), indexed->length);
    if (now.ok() && now->has_value() && (*now)->second.entries.size() >= prefix.size() &&
        std::equal(prefix.begin(), prefix.end(), (*now)->second.entries.begin())) {
      indexed->witness_etag = (*now)->first;
      return Status::Ok();
    }
    indexed->witness.reset();  // replaced, gone or unreadable: the blobs themselves, here and after
  }
  return PrefixBlobsInL2(ns, ns_id, entries, *indexed);
}

Status StoreImpl::RecheckIndexedPrefix(std::string_view ns, const Fingerprint& fp, uint32_t ns_id,
                                       const ChainId& written,
                                       const std::vector<ChainEntry>& entries,
                                       const IndexedPrefix& indexed) {
  if (indexed.length == 0) return Status::Ok();
  if (indexed.witness) {
    auto now = l2_->Head(layout::ChainKey(options_.l2_prefix, ns, fp, *indexed.witness));
    // A head's ETag changes with every write of it (docs/layout.md: on S3 its bytes, which hold
    // its publish time, are hashed; a local file or packed record gets a new one).
    if (now.ok() && now->etag == indexed.witness_etag) return Status::Ok();
  }
  WMBT_RETURN_IF_ERROR(PrefixBlobsInL2(ns, ns_id, entries, indexed));
  RememberFork(ns_id, fp, entries, indexed, written);
  return Status::Ok();
}

void StoreImpl::RememberFork(uint32_t ns_id, const Fingerprint& fp,
                             const std::vector<ChainEntry>& entries, const IndexedPrefix& indexed,
                             const ChainId& written) {
  // `written` starts with the prefix: a witness for the next publish continuing it (a publish
  // rewriting `written` itself does not take it: CheckIndexedPrefix).
  const BlockKey& at = entries[indexed.length - 1].key;
  std::lock_guard<std::mutex> g(fork_hints_mu_);
  if (fork_hints_.size() >= kForkHintsMax) fork_hints_.clear();  // hints: start over
  fork_hints_[ForkPoint{PendingKey{ns_id, fp, at}, indexed.length}] = written;
}

Status StoreImpl::PrefixBlobsInL2(std::string_view ns, uint32_t ns_id,
                                  const std::vector<ChainEntry>& entries,
                                  const IndexedPrefix& indexed) {
  std::vector<ContentHash> hashes;
  for (size_t i = 0; i < indexed.length; ++i) hashes.push_back(entries[i].hash);
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  return ReverifyReusedBlobs(ns, ns_id, hashes, ReusedCopies{})
      .WithContext("checking the " + std::to_string(indexed.length) +
                   " published blocks this chain continues");
}

}  // namespace wombatkv
