#include "gc/l2_scan.h"

#include <algorithm>

#include "base/check.h"
#include "base/limits.h"
#include "layout/object_keys.h"

namespace wombatkv::gc {
namespace {

constexpr size_t kPagesMax = size_t{1} << 24;  // a listing always makes progress; bound it anyway

// Sorts one key under "<prefix>/<ns>/" into `out`.
void Classify(std::string_view prefix, ObjectInfo info, NamespaceListing* out) {
  if (out->ns_valid) {
    const std::string& ns = out->ns;
    const std::string& key = info.key;
    if (auto hash = layout::ParseBlobKey(layout::BlobsPrefix(prefix, ns), key)) {
      if (key == layout::BlobKey(prefix, ns, *hash)) {
        out->blobs.push_back(ListedBlob{std::move(info), *hash});
        return;
      }
    } else if (auto chain = layout::ParseChainKey(layout::ChainsPrefix(prefix, ns), key)) {
      if (key == layout::ChainKey(prefix, ns, chain->fp, chain->chain_id)) {
        out->heads.push_back(ListedHead{std::move(info), chain->fp, chain->chain_id});
        return;
      }
    } else if (auto sc = layout::ParseSidecarKey(layout::SidecarsPrefix(prefix, ns), key)) {
      if (key == layout::SidecarKey(prefix, ns, sc->fp, sc->tip)) {
        out->sidecars.push_back(ListedSidecar{std::move(info), sc->fp, sc->tip});
        return;
      }
    } else if (key == layout::EvictLeaseKey(prefix, ns)) {
      return;  // the namespace's eviction lease: small, rewritten in place, no one's data
    }
  }
  out->strays.push_back(std::move(info));
}

// Every object under `dir` (no delimiter), page by page.
Status ListAll(ObjectStore* l2, const std::string& dir,
               const std::function<void(ObjectInfo&&)>& each,
               const std::function<void()>& page_done) {
  std::string token;
  for (size_t pages = 0;; ++pages) {
    WMBT_CHECK(pages < kPagesMax);
    WMBT_ASSIGN_OR_RETURN(ListPage page, l2->List(dir, "", token, limits::kListPageKeysMax));
    for (ObjectInfo& obj : page.objects) each(std::move(obj));
    if (page_done) page_done();
    if (page.next_token.empty()) return Status::Ok();
    token = std::move(page.next_token);
  }
}

Result<NamespaceListing> ListSegment(ObjectStore* l2, std::string_view prefix,
                                     std::string_view segment, ScanProgress* progress,
                                     const ScanProgressFn& report) {
  NamespaceListing out;
  out.ns = std::string(segment);
  out.ns_valid = ValidateNamespace(segment).ok();
  const std::string dir = layout::NamespacesPrefix(prefix) + out.ns + "/";
  progress->ns = out.ns;
  WMBT_RETURN_IF_ERROR(ListAll(
      l2, dir,
      [&](ObjectInfo&& obj) {
        ++progress->keys_listed;
        Classify(prefix, std::move(obj), &out);
      },
      [&] {
        if (report) report(*progress);
      }));
  return out;
}

HeadRead ReadOne(ObjectStore* l2, std::string_view ns, const ListedHead& listed, Status* failed) {
  HeadRead r;
  auto obj = l2->Get(listed.info.key, 0, limits::kHeadObjectBytesMax + 1);
  if (!obj.ok()) {
    if (obj.status().IsNotFound()) {
      r.state = HeadRead::State::kGone;
    } else {
      *failed = obj.status().WithContext("reading chain head " + listed.info.key);
    }
    return r;
  }
  r.etag = obj->etag;
  if (obj->object_size > limits::kHeadObjectBytesMax) {
    r.state = HeadRead::State::kUnreadable;
    r.error = Status::Corruption(listed.info.key + " is " + std::to_string(obj->object_size) +
                                 " bytes, over the limit of " +
                                 std::to_string(limits::kHeadObjectBytesMax) + " for a head");
    return r;
  }
  auto head = layout::DecodeChainHead(obj->bytes->view(), listed.info.key);
  if (!head.ok()) {
    r.state = HeadRead::State::kUnreadable;
    r.error = head.status();
    return r;
  }
  if (head->ns != ns || head->fp != listed.fp || head->chain_id != listed.chain_id) {
    r.state = HeadRead::State::kOtherChain;
    r.error = Status::Corruption("chain head " + listed.info.key + " describes another chain: " +
                                 "namespace " + head->ns + ", fingerprint " + head->fp.ToHex() +
                                 ", chain " + head->chain_id.ToHex());
  }
  r.head = std::move(head).value();
  return r;
}

}  // namespace

Status ScanL2(ObjectStore* l2, std::string_view prefix,
              const std::function<Status(NamespaceListing&&)>& on_namespace,
              const std::function<void(const ObjectInfo&)>& on_stray,
              const ScanProgressFn& progress) {
  const std::string top = layout::NamespacesPrefix(prefix);
  ScanProgress state;
  std::string token;
  for (size_t pages = 0;; ++pages) {
    WMBT_CHECK(pages < kPagesMax);
    WMBT_ASSIGN_OR_RETURN(ListPage page, l2->List(top, "/", token, limits::kListPageKeysMax));
    // Objects and common prefixes are each in order; together they interleave. Segments are
    // visited in the order of their prefixes, which is what a caller sees.
    for (const ObjectInfo& obj : page.objects) {
      ++state.keys_listed;
      if (on_stray) on_stray(obj);
    }
    for (const std::string& dir : page.common_prefixes) {
      std::string_view segment = std::string_view(dir).substr(top.size());
      segment.remove_suffix(1);  // the '/'
      WMBT_ASSIGN_OR_RETURN(NamespaceListing listing,
                            ListSegment(l2, prefix, segment, &state, progress));
      WMBT_RETURN_IF_ERROR(on_namespace(std::move(listing)));
      ++state.namespaces_done;
    }
    if (page.next_token.empty()) return Status::Ok();
    token = std::move(page.next_token);
  }
}

Result<NamespaceListing> ListNamespace(ObjectStore* l2, std::string_view prefix,
                                       std::string_view ns, const ScanProgressFn& progress) {
  WMBT_CHECK(ValidateNamespace(ns).ok());
  ScanProgress state;
  return ListSegment(l2, prefix, ns, &state, progress);
}

Result<std::vector<std::string>> ListNamespaces(ObjectStore* l2, std::string_view prefix) {
  std::vector<std::string> out;
  const std::string top = layout::NamespacesPrefix(prefix);
  std::string token;
  for (size_t pages = 0;; ++pages) {
    WMBT_CHECK(pages < kPagesMax);
    WMBT_ASSIGN_OR_RETURN(ListPage page, l2->List(top, "/", token, limits::kListPageKeysMax));
    for (const std::string& dir : page.common_prefixes) {
      if (auto ns = layout::ParseNamespaceDir(prefix, dir)) out.push_back(std::move(*ns));
    }
    if (page.next_token.empty()) return out;
    token = std::move(page.next_token);
  }
}

Result<std::vector<ListedHead>> ListHeads(ObjectStore* l2, std::string_view prefix,
                                          std::string_view ns) {
  std::vector<ListedHead> out;
  const std::string dir = layout::ChainsPrefix(prefix, ns);
  WMBT_RETURN_IF_ERROR(ListAll(
      l2, dir,
      [&](ObjectInfo&& obj) {
        auto chain = layout::ParseChainKey(dir, obj.key);
        if (chain && obj.key == layout::ChainKey(prefix, ns, chain->fp, chain->chain_id)) {
          out.push_back(ListedHead{std::move(obj), chain->fp, chain->chain_id});
        }
      },
      nullptr));
  return out;
}

Result<std::vector<HeadRead>> ReadHeads(ObjectStore* l2, std::string_view ns,
                                        const std::vector<ListedHead>& heads, Executor* executor,
                                        size_t parallel_max) {
  std::vector<HeadRead> out(heads.size());
  std::vector<Status> failed(heads.size());
  if (executor == nullptr || heads.size() < 2) {
    for (size_t i = 0; i < heads.size(); ++i) {
      out[i] = ReadOne(l2, ns, heads[i], &failed[i]);
      if (!failed[i].ok()) return failed[i];
    }
    return out;
  }
  parallel_max = std::max<size_t>(parallel_max, 1);
  for (size_t begin = 0; begin < heads.size(); begin += parallel_max) {
    const size_t end = std::min(heads.size(), begin + parallel_max);
    std::vector<Completion> done(end - begin);
    for (size_t i = begin; i < end; ++i) {
      executor->Submit([&, i] {
        out[i] = ReadOne(l2, ns, heads[i], &failed[i]);
        done[i - begin].Set(Status::Ok());
      });
    }
    Status waited;  // every task is awaited before returning: they reference this frame
    for (const Completion& c : done) {
      Status s = executor->Await(c);
      if (waited.ok() && !s.ok()) waited = s;
    }
    WMBT_RETURN_IF_ERROR(waited);
    for (size_t i = begin; i < end; ++i) WMBT_RETURN_IF_ERROR(failed[i]);
  }
  return out;
}

}  // namespace wombatkv::gc
