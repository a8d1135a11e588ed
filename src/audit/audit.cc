#include "audit/audit.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "base/hex.h"
#include "base/limits.h"
#include "layout/blob_object.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/meta_records.h"

namespace wombatkv::audit {
namespace {

using gc::HeadRead;
using gc::ListedBlob;
using gc::NamespaceListing;
using HeadId = std::tuple<std::string, Fingerprint, ChainId>;

constexpr uint64_t kEnvelope = layout::kEnvelopeHeaderBytes;

// What the L1 comparison needs of each L2 head.
struct L2Head {
  bool readable = false;
  std::string etag;
  uint64_t version = 0;
};

// Where a blob is first named: for messages, and the length every other reference must agree on.
struct Reference {
  std::string head_key;
  size_t index = 0;
  uint32_t length = 0;
};

struct NsAcc {
  UsageCounts total;
  std::map<Fingerprint, UsageCounts> fps;
};

std::string L1Name(std::string_view tag, std::string_view ns, const Fingerprint& fp,
                   const BlockKey& id) {
  return "L1 " + std::string(tag) + " " + std::string(ns) + "/" + fp.ToHex() + "/" + id.ToHex();
}

// A key of unknown shape, printable: the tag, then hex.
std::string L1RawName(std::string_view key) {
  const size_t shown = std::min<size_t>(key.size(), 80);
  return "L1 record " + HexEncode({reinterpret_cast<const uint8_t*>(key.data()), shown});
}

class Auditor {
 public:
  Auditor(ObjectStore* l2, MetaStore* l1, Clock* clock, const AuditOptions& options,
          const AuditProgressFn& progress)
      : l2_(l2), l1_(l1), clock_(clock), options_(options), progress_(progress) {}

  Result<AuditReport> Run() {
    WMBT_RETURN_IF_ERROR(gc::ScanL2(
        l2_, options_.l2_prefix,
        [this](NamespaceListing&& listing) { return AuditNamespace(std::move(listing)); },
        [this](const ObjectInfo& obj) {
          Violate(ViolationKind::kStrayKey, "", obj.key,
                  "an object directly under the prefix, outside every namespace");
          UsageCounts& c = ns_[""].total;  // "": outside every namespace
          c.strays++;
          c.stray_bytes += obj.size;
        },
        [this](const gc::ScanProgress& p) {
          report_.keys_listed = p.keys_listed;
          Progress("listing", p.keys_listed, 0);
        }));
    if (l1_) WMBT_RETURN_IF_ERROR(CheckL1());
    Finish();
    return std::move(report_);
  }

 private:
  void Violate(ViolationKind kind, std::string ns, std::string key, std::string detail) {
    report_.violations.push_back(
        Violation{kind, std::move(ns), std::move(key), std::move(detail)});
  }
  void Progress(std::string_view phase, uint64_t done, uint64_t total) {
    if (progress_) progress_(AuditProgress{phase, done, total});
  }

  Status AuditNamespace(NamespaceListing&& listing) {
    const std::string ns = listing.ns;
    NsAcc& acc = ns_[listing.ns_valid ? ns : std::string()];  // "": outside every namespace
    for (const ObjectInfo& s : listing.strays) {
      Violate(ViolationKind::kStrayKey, listing.ns_valid ? ns : "", s.key,
              listing.ns_valid ? "not a blob, chain head or sidecar name of layout v1"
                               : "\"" + ns + "\" is not a valid namespace");
      acc.total.strays++;
      acc.total.stray_bytes += s.size;
    }
    if (!listing.ns_valid) return Status::Ok();

    WMBT_ASSIGN_OR_RETURN(std::vector<HeadRead> reads,
                          gc::ReadHeads(l2_, ns, listing.heads, options_.executor));
    report_.heads_read += reads.size();
    gc::HashSet referenced;
    std::unordered_map<ContentHash, Reference, FixedBytesHash> first_ref;
    std::map<Fingerprint, std::unordered_map<ContentHash, uint32_t, FixedBytesHash>> fp_blobs;
    for (size_t i = 0; i < reads.size(); ++i) {
      const gc::ListedHead& listed = listing.heads[i];
      HeadRead& r = reads[i];
      if (r.state == HeadRead::State::kGone) continue;
      report_.bytes_read += listed.info.size;
      UsageCounts& fc = acc.fps[listed.fp];
      fc.heads++;
      fc.head_bytes += listed.info.size;
      L2Head& seen = l2_heads_[HeadId{ns, listed.fp, listed.chain_id}];
      seen.etag = r.etag;
      if (r.state == HeadRead::State::kUnreadable) {
        Violate(ViolationKind::kHeadUnreadable, ns, listed.info.key, r.error.message());
        continue;
      }
      if (r.state == HeadRead::State::kOtherChain) {
        Violate(ViolationKind::kHeadNamesAnotherChain, ns, listed.info.key, r.error.message());
      } else {
        seen.readable = true;
        seen.version = r.head->version;
      }
      const auto& entries = r.head->entries;
      fc.head_entries += entries.size();
      for (size_t e = 0; e < entries.size(); ++e) {
        const ChainEntry& entry = entries[e];
        referenced.insert(entry.hash);
        fp_blobs[listed.fp].emplace(entry.hash, entry.length);
        auto [it, fresh] =
            first_ref.emplace(entry.hash, Reference{listed.info.key, e, entry.length});
        if (!fresh && it->second.length != entry.length) {
          Violate(ViolationKind::kBlobCorrupt, ns,
                  layout::BlobKey(options_.l2_prefix, ns, entry.hash),
                  "heads disagree on its length: " + it->second.head_key + " says " +
                      std::to_string(it->second.length) + ", " + listed.info.key + " says " +
                      std::to_string(entry.length));
        }
      }
    }

    std::unordered_map<ContentHash, const ObjectInfo*, FixedBytesHash> present;
    for (const ListedBlob& b : listing.blobs) present.emplace(b.hash, &b.info);
    std::vector<ObjectInfo> confirmed;  // blobs a HEAD found after the listing missed them
    confirmed.reserve(first_ref.size());
    std::vector<std::pair<ContentHash, const ObjectInfo*>> to_verify, headers_to_read;
    for (const auto& [hash, ref] : first_ref) {
      const std::string key = layout::BlobKey(options_.l2_prefix, ns, hash);
      auto it = present.find(hash);
      if (it == present.end()) {
        // The listing reads blob/ before chain/: a publish in between looks like a missing blob.
        auto head = l2_->Head(key);
        if (head.ok()) {
          confirmed.push_back(std::move(head).value());
          it = present.emplace(hash, &confirmed.back()).first;
        } else if (head.status().IsNotFound()) {
          Violate(ViolationKind::kBlobMissing, ns, key,
                  "named by chain head " + ref.head_key + " (entry " + std::to_string(ref.index) +
                      ", " + std::to_string(ref.length) + " bytes)");
          continue;
        } else {
          return head.status().WithContext("auditing " + key);
        }
      }
      // By size. A size only a compressed blob can have is checked by the full audit's decode
      // (VerifyBlobs), by a quick one from the blob's 48-byte header (a raw blob cut short has
      // such a size too).
      const layout::BlobSize judged = layout::JudgeBlobSize(it->second->size, ref.length);
      if (judged == layout::BlobSize::kWrong) {
        Violate(ViolationKind::kBlobCorrupt, ns, key,
                "object is " + std::to_string(it->second->size) + " bytes; chain head " +
                    ref.head_key + " gives a payload of " + std::to_string(ref.length) +
                    " (expected " + std::to_string(kEnvelope + ref.length) +
                    ", or less if compressed)");
        continue;
      }
      if (!options_.quick) {
        to_verify.emplace_back(hash, it->second);
      } else if (judged == layout::BlobSize::kMaybeCompressed) {
        headers_to_read.emplace_back(hash, it->second);
      }
    }
    WMBT_RETURN_IF_ERROR(CheckCompressedHeaders(ns, headers_to_read, first_ref));
    if (!options_.quick) {
      WMBT_RETURN_IF_ERROR(VerifyBlobs(ns, to_verify, first_ref));
      WMBT_RETURN_IF_ERROR(VerifySidecars(ns, listing));
    }

    // Usage: the namespace counts every blob once; a fingerprint counts the blobs its heads name.
    for (const ListedBlob& b : listing.blobs) {
      acc.total.blobs++;
      acc.total.blob_bytes += b.info.size;
      acc.total.payload_bytes += b.info.size > kEnvelope ? b.info.size - kEnvelope : 0;
    }
    for (const auto& [fp, blobs] : fp_blobs) {
      UsageCounts& fc = acc.fps[fp];
      for (const auto& [hash, length] : blobs) {
        auto it = present.find(hash);
        if (it == present.end()) continue;
        fc.blobs++;
        fc.blob_bytes += it->second->size;
        fc.payload_bytes += length;
      }
    }
    for (const gc::ListedSidecar& s : listing.sidecars) {
      UsageCounts& fc = acc.fps[s.fp];
      fc.sidecars++;
      fc.sidecar_bytes += s.info.size;
    }
    std::vector<gc::OrphanBlob> orphans =
        gc::FindOrphans(listing, referenced, clock_->WallMicros());
    for (gc::OrphanBlob& o : orphans) {
      acc.total.orphans++;
      acc.total.orphan_bytes += o.bytes;
      if (o.age_known && o.age_us >= options_.grace_us) {
        report_.expired_orphans++;
        report_.expired_orphan_bytes += o.bytes;
      }
      report_.orphans.push_back(std::move(o));
    }
    return Status::Ok();
  }

  // A quick audit's check of blobs listed under their raw size: each header (a ranged read of
  // 48 bytes, in parallel windows) must be a zstd header naming the payload and its size.
  Status CheckCompressedHeaders(
      const std::string& ns, const std::vector<std::pair<ContentHash, const ObjectInfo*>>& blobs,
      const std::unordered_map<ContentHash, Reference, FixedBytesHash>& refs) {
    constexpr size_t kWindow = 256;
    for (size_t begin = 0; begin < blobs.size(); begin += kWindow) {
      const size_t end = std::min(blobs.size(), begin + kWindow);
      std::vector<Result<bool>> fits(end - begin, Status::Internal("not checked"));
      RunAll(begin, end, [&](size_t i) {
        const auto& [hash, info] = blobs[i];
        fits[i - begin] =
            layout::BlobObjectFits(*l2_, info->key, info->size, refs.at(hash).length, hash);
      });
      for (size_t i = begin; i < end; ++i) {
        const auto& [hash, info] = blobs[i];
        const Result<bool>& r = fits[i - begin];
        if (!r.ok() && r.status().IsNotFound()) continue;  // deleted since the listing
        if (!r.ok()) return r.status().WithContext("auditing " + info->key);
        report_.bytes_read += layout::kEnvelopeHeaderBytes;
        if (*r) continue;
        const Reference& ref = refs.at(hash);
        Violate(ViolationKind::kBlobCorrupt, ns, info->key,
                "object is " + std::to_string(info->size) + " bytes, under the " +
                    std::to_string(kEnvelope + ref.length) + " of chain head " + ref.head_key +
                    "'s " + std::to_string(ref.length) + "-byte payload, and its header is not "
                    "a zstd header naming that payload");
      }
    }
    return Status::Ok();
  }

  Status VerifyBlobs(const std::string& ns,
                     const std::vector<std::pair<ContentHash, const ObjectInfo*>>& blobs,
                     const std::unordered_map<ContentHash, Reference, FixedBytesHash>& refs) {
    // Windows bounded in bytes (a window always takes one blob), read in parallel if we can.
    struct Check {
      std::string key;
      Status problem;  // Corruption: a violation; another code: the audit fails
    };
    size_t begin = 0;
    while (begin < blobs.size()) {
      size_t end = begin;
      uint64_t bytes = 0;
      while (end < blobs.size() && (end == begin || bytes + blobs[end].second->size <=
                                                         options_.read_window_bytes)) {
        bytes += blobs[end].second->size;
        ++end;
      }
      std::vector<Check> checks(end - begin);
      auto check_one = [&](size_t i) {
        const auto& [hash, info] = blobs[i];
        Check& c = checks[i - begin];
        c.key = info->key;
        auto obj = l2_->Get(info->key, 0, kEnvelope + limits::kBlockBytesMax + 1);
        if (!obj.ok()) {
          // Deleted since the listing (GC of a blob whose head went too): nothing to check.
          if (!obj.status().IsNotFound()) c.problem = obj.status();
          return;
        }
        auto payload = layout::DecodeVerified(layout::EnvelopeKind::kBlob, obj->bytes, hash,
                                              info->key);
        if (!payload.ok()) {
          c.problem = payload.status();
        } else if (payload->size != refs.at(hash).length) {
          c.problem = Status::Corruption("payload is " + std::to_string(payload->size) +
                                         " bytes; chain head " + refs.at(hash).head_key +
                                         " says " + std::to_string(refs.at(hash).length));
        }
      };
      RunAll(begin, end, check_one);
      for (size_t i = begin; i < end; ++i) {
        const Check& c = checks[i - begin];
        report_.bytes_read += blobs[i].second->size;
        report_.blobs_verified++;
        if (c.problem.ok()) continue;
        if (c.problem.code() != Code::kCorruption) {
          return c.problem.WithContext("auditing " + c.key);
        }
        Violate(ViolationKind::kBlobCorrupt, ns, c.key, c.problem.message());
      }
      verified_ += end - begin;
      Progress("verifying", verified_, 0);
      begin = end;
    }
    return Status::Ok();
  }

  Status VerifySidecars(const std::string& ns, const NamespaceListing& listing) {
    for (const gc::ListedSidecar& s : listing.sidecars) {
      auto obj = l2_->Get(s.info.key, 0, kEnvelope + limits::kSidecarBytesMax + 1);
      if (!obj.ok()) {
        if (obj.status().IsNotFound()) continue;
        return obj.status().WithContext("auditing " + s.info.key);
      }
      report_.bytes_read += obj->bytes->size();
      report_.sidecars_verified++;
      auto payload = layout::DecodeSidecar(obj->bytes, ns, s.fp, s.tip, s.info.key);
      if (!payload.ok()) {
        Violate(ViolationKind::kSidecarCorrupt, ns, s.info.key, payload.status().message());
      }
    }
    return Status::Ok();
  }

  // Runs fn(i) for i in [begin, end): on the executor when there is one.
  void RunAll(size_t begin, size_t end, const std::function<void(size_t)>& fn) {
    if (!options_.executor || end - begin < 2) {
      for (size_t i = begin; i < end; ++i) fn(i);
      return;
    }
    std::vector<Completion> done(end - begin);
    for (size_t i = begin; i < end; ++i) {
      options_.executor->Submit([&, i] {
        fn(i);
        done[i - begin].Set(Status::Ok());
      });
    }
    // Every task is awaited (they reference this frame); an executor that cannot run them is a
    // bug of the caller's setup, so run what is left here.
    for (size_t i = begin; i < end; ++i) {
      if (!options_.executor->Await(done[i - begin]).ok() && !done[i - begin].done()) fn(i);
    }
  }

  Status CheckL1() {
    report_.l1_checked = true;
    uint64_t records = 0;
    auto format = l1_->Get(meta_records::kFormatKey);
    if (format.ok() && *format != meta_records::kFormatValue) {
      Violate(ViolationKind::kL1Unreadable, "", "L1 F",
              "unknown format marker \"" + format->substr(0, 40) + "\"");
    } else if (!format.ok() && !format.status().IsNotFound()) {
      Violate(ViolationKind::kL1Unreadable, "", "L1 F", format.status().message());
    }
    std::map<HeadId, std::pair<std::string, uint64_t>> l1_heads;  // etag, version
    Status scan = l1_->Scan(meta_records::kHeadPrefix, [&](std::string_view k, std::string_view v) {
      Progress("l1", ++records, 0);
      auto rec = meta_records::DecodeHeadRecord(k, v);
      if (!rec.ok()) {
        Violate(ViolationKind::kL1Unreadable, "", L1RawName(k), rec.status().message());
        return true;
      }
      const layout::ChainHead& h = rec->head;
      UsageCounts& c = ns_[h.ns].fps[h.fp];
      c.l1_heads++;
      c.l1_head_bytes += v.size();
      c.l1_blocks += h.entries.size();
      l1_heads[HeadId{h.ns, h.fp, h.chain_id}] = {rec->etag, h.version};
      return true;
    });
    // A record whose CRC fails stops the scan: what follows it is unknown, so "missing from L1"
    // cannot be judged. Rebuilding L1 (--repair) fixes both.
    const bool complete = scan.ok();
    if (!scan.ok()) {
      Violate(ViolationKind::kL1Unreadable, "", "L1 H", scan.message());
    }
    for (const auto& [id, rec] : l1_heads) {
      const auto& [ns, fp, chain] = id;
      auto it = l2_heads_.find(id);
      const std::string name = L1Name("H", ns, fp, chain);
      if (it == l2_heads_.end()) {
        Violate(ViolationKind::kL1Stale, ns, name,
                "L1 holds version " + std::to_string(rec.second) +
                    " of a chain head that L2 does not have");
      } else if (!it->second.readable) {
        Violate(ViolationKind::kL1Stale, ns, name,
                "L1 holds version " + std::to_string(rec.second) +
                    " of a chain head that is unreadable in L2");
      } else if (it->second.etag != rec.first) {
        Violate(ViolationKind::kL1Stale, ns, name,
                "L1 holds version " + std::to_string(rec.second) + " (ETag " + rec.first +
                    "); L2 has version " + std::to_string(it->second.version) + " (ETag " +
                    it->second.etag + ")");
      }
    }
    if (complete) {
      for (const auto& [id, head] : l2_heads_) {
        if (!head.readable || l1_heads.count(id)) continue;
        const auto& [ns, fp, chain] = id;
        Violate(ViolationKind::kL1MissingHead, ns, L1Name("H", ns, fp, chain),
                "L2 has version " + std::to_string(head.version) + " of this chain; L1 has no "
                "record of it");
      }
    }
    Status pending = l1_->Scan(meta_records::kPendingPrefix,
                               [&](std::string_view k, std::string_view v) {
                                 Progress("l1", ++records, 0);
                                 auto e = meta_records::DecodePending(k, v);
                                 if (!e.ok()) {
                                   Violate(ViolationKind::kL1Unreadable, "", L1RawName(k),
                                           e.status().message());
                                   return true;
                                 }
                                 UsageCounts& c = ns_[e->ns].fps[e->fp];
                                 c.l1_pending++;
                                 c.l1_pending_payload_bytes += e->record.length;
                                 return true;
                               });
    if (!pending.ok()) Violate(ViolationKind::kL1Unreadable, "", "L1 P", pending.message());
    return Status::Ok();
  }

  void Finish() {
    for (auto& [ns, acc] : ns_) {
      UsageCounts whole = acc.total;
      // L1 and head counts live in fingerprint rows; the namespace row sums them (blobs,
      // orphans and strays are counted once, per namespace, above).
      for (const auto& [fp, c] : acc.fps) {
        whole.l1_heads += c.l1_heads;
        whole.l1_head_bytes += c.l1_head_bytes;
        whole.l1_blocks += c.l1_blocks;
        whole.l1_pending += c.l1_pending;
        whole.l1_pending_payload_bytes += c.l1_pending_payload_bytes;
        whole.heads += c.heads;
        whole.head_bytes += c.head_bytes;
        whole.head_entries += c.head_entries;
        whole.sidecars += c.sidecars;
        whole.sidecar_bytes += c.sidecar_bytes;
      }
      report_.usage.push_back(UsageRow{ns, std::nullopt, whole});
      report_.total.Add(whole);
      for (const auto& [fp, c] : acc.fps) report_.usage.push_back(UsageRow{ns, fp, c});
    }
    std::sort(report_.orphans.begin(), report_.orphans.end(),
              [](const gc::OrphanBlob& a, const gc::OrphanBlob& b) {
                if (a.age_us != b.age_us) return a.age_us > b.age_us;
                return a.key < b.key;
              });
  }

  ObjectStore* l2_;
  MetaStore* l1_;
  Clock* clock_;
  const AuditOptions& options_;
  const AuditProgressFn& progress_;
  AuditReport report_;
  std::map<std::string, NsAcc> ns_;
  std::map<HeadId, L2Head> l2_heads_;
  uint64_t verified_ = 0;
};

}  // namespace

void UsageCounts::Add(const UsageCounts& o) {
  l1_heads += o.l1_heads;
  l1_head_bytes += o.l1_head_bytes;
  l1_blocks += o.l1_blocks;
  l1_pending += o.l1_pending;
  l1_pending_payload_bytes += o.l1_pending_payload_bytes;
  heads += o.heads;
  head_bytes += o.head_bytes;
  head_entries += o.head_entries;
  blobs += o.blobs;
  blob_bytes += o.blob_bytes;
  payload_bytes += o.payload_bytes;
  orphans += o.orphans;
  orphan_bytes += o.orphan_bytes;
  sidecars += o.sidecars;
  sidecar_bytes += o.sidecar_bytes;
  strays += o.strays;
  stray_bytes += o.stray_bytes;
}

std::string_view KindName(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kStrayKey: return "stray_key";
    case ViolationKind::kHeadUnreadable: return "head_unreadable";
    case ViolationKind::kHeadNamesAnotherChain: return "head_names_another_chain";
    case ViolationKind::kBlobMissing: return "blob_missing";
    case ViolationKind::kBlobCorrupt: return "blob_corrupt";
    case ViolationKind::kSidecarCorrupt: return "sidecar_corrupt";
    case ViolationKind::kL1Unreadable: return "l1_unreadable";
    case ViolationKind::kL1Stale: return "l1_stale";
    case ViolationKind::kL1MissingHead: return "l1_missing_head";
  }
  return "unknown";
}

bool Repairable(ViolationKind kind) {
  return kind != ViolationKind::kStrayKey && kind != ViolationKind::kBlobMissing;
}

size_t AuditReport::CountOf(ViolationKind kind) const {
  return static_cast<size_t>(std::count_if(violations.begin(), violations.end(),
                                           [&](const Violation& v) { return v.kind == kind; }));
}

size_t AuditReport::RepairableCount() const {
  return static_cast<size_t>(std::count_if(violations.begin(), violations.end(),
                                           [](const Violation& v) { return Repairable(v.kind); }));
}

Result<AuditReport> RunAudit(ObjectStore* l2, MetaStore* l1, Clock* clock,
                             const AuditOptions& options, const AuditProgressFn& progress) {
  WMBT_RETURN_IF_ERROR(layout::ValidateL2Prefix(options.l2_prefix));
  Auditor auditor(l2, l1, clock, options, progress);
  return auditor.Run();
}

}  // namespace wombatkv::audit
