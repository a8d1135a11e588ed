// FsObjectStore::List: a walk of the directory tree in key order (fs_object_store_impl.h).
#include "object/fs_object_store_impl.h"

namespace wombatkv::fs_internal {

Result<ListPage> FsObjectStore::List(std::string_view prefix, std::string_view delimiter,
                                     std::string_view token, size_t max_keys) {
  WMBT_ASSIGN_OR_RETURN(size_t page_size, CheckListArgs(prefix, delimiter, max_keys));
  if (journal_) {
    std::lock_guard<std::mutex> g(name_mu_);
    WMBT_RETURN_IF_ERROR(broken_);  // see AwaitJournaled
  }
  // Only the directory named by the prefix's complete segments is read; the partial last
  // segment filters its entries.
  const size_t cut = prefix.find_last_of('/') + 1;  // 0 if none
  // Packed objects before and after the walk: a key that moves between the forms meanwhile
  // is in one of the three.
  bool packed_more = false;
  auto packed_now = [&]() -> Result<std::vector<ListEntry>> {
    std::vector<ListEntry> out;
    bool more = false;
    if (journal_) {
      std::lock_guard<std::mutex> g(name_mu_);
      packed_.ListInto(prefix, !delimiter.empty(), token, page_size, &out, &more);
    } else {
      WMBT_RETURN_IF_ERROR(view_->Refresh());
      view_->ListInto(prefix, !delimiter.empty(), token, page_size, &out, &more);
    }
    packed_more = packed_more || more;
    return out;
  };
  WMBT_ASSIGN_OR_RETURN(std::vector<ListEntry> before, packed_now());
  ListPageBuilder page(page_size);
  Walk walk{page, token, !delimiter.empty()};
  WMBT_RETURN_IF_ERROR(ListDir(walk, std::string(prefix.substr(0, cut)), prefix.substr(cut), 0));
  WMBT_ASSIGN_OR_RETURN(std::vector<ListEntry> after, packed_now());
  if (before.empty() && after.empty()) return std::move(page).Finish();
  ListPage files = std::move(page).Finish();
  const bool files_more = !files.next_token.empty();
  return MergeListings(EntriesOf(std::move(files)), files_more,
                       UnionListings(std::move(before), std::move(after)), packed_more, page_size);
}

std::vector<ListEntry> FsObjectStore::EntriesOf(ListPage page) {
  std::vector<ListEntry> out;
  out.reserve(page.objects.size() + page.common_prefixes.size());
  size_t i = 0, j = 0;
  while (i < page.objects.size() || j < page.common_prefixes.size()) {
    if (j == page.common_prefixes.size() ||
        (i < page.objects.size() && page.objects[i].key < page.common_prefixes[j])) {
      std::string name = page.objects[i].key;
      out.push_back(ListEntry{std::move(name), false, std::move(page.objects[i++])});
    } else {
      out.push_back(ListEntry{std::move(page.common_prefixes[j++]), true, {}});
    }
  }
  return out;
}

Status FsObjectStore::ListDir(Walk& walk, const std::string& rel, std::string_view filter,
                              int depth) {
  if (depth > kWalkDepthMax) return Status::Internal("list: directory tree too deep at " + rel);
  auto names = fs_->ListDir(PathOf(rel));
  if (!names.ok()) return names.status().IsNotFound() ? Status::Ok() : names.status();
  // Names the token excludes whatever their type are dropped unread; the rest come out of a
  // min-heap, so a page costs O(entries + page * log entries), not a sort of the directory.
  std::vector<std::string> heap;
  for (std::string& n : *names) {
    if (!IsValidKeySegment(n) || !n.starts_with(filter)) continue;
    std::string key = rel + n;
    if (SkippedByToken(key, walk.token) && SubtreeSkippedByToken(key + "/", walk.token)) continue;
    heap.push_back(std::move(n));
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());

  std::priority_queue<std::string, std::vector<std::string>, std::greater<>> dirs;
  auto flush_dirs_before = [&](const std::string* bound) -> Status {
    while (!dirs.empty() && !walk.page.full() && (bound == nullptr || dirs.top() < *bound)) {
      std::string dir = dirs.top();
      dirs.pop();
      WMBT_RETURN_IF_ERROR(VisitDir(walk, dir, depth));
    }
    return Status::Ok();
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const std::string key = rel + heap.back();
    heap.pop_back();
    WMBT_RETURN_IF_ERROR(flush_dirs_before(&key));
    if (walk.page.full()) return Status::Ok();
    auto info = fs_->Stat(PathOf(key));
    if (!info.ok()) {
      if (info.status().IsNotFound()) continue;  // deleted while we list
      return info.status();
    }
    const std::string as_dir = key + "/";
    if (info->is_dir) {
      if (!SubtreeSkippedByToken(as_dir, walk.token)) dirs.push(as_dir);
    } else if (!SkippedByToken(key, walk.token)) {
      if (!walk.page.AddObject({key, info->size, EtagOf(*info), info->mtime_ns / 1000})) {
        return Status::Ok();
      }
    }
  }
  return flush_dirs_before(nullptr);
}

Status FsObjectStore::VisitDir(Walk& walk, const std::string& dir, int depth) {
  if (!(walk.group && depth == 0)) return ListDir(walk, dir, "", depth + 1);
  if (SkippedByToken(dir, walk.token)) return Status::Ok();
  WMBT_ASSIGN_OR_RETURN(bool nonempty, HasObject(dir, depth + 1));
  if (nonempty) walk.page.AddPrefix(dir);
  return Status::Ok();
}

Result<bool> FsObjectStore::HasObject(const std::string& rel, int depth) {
  if (depth > kWalkDepthMax) return Status::Internal("list: directory tree too deep at " + rel);
  auto names = fs_->ListDir(PathOf(rel));
  if (!names.ok()) {
    if (names.status().IsNotFound()) return false;
    return names.status();
  }
  for (const std::string& n : *names) {
    if (!IsValidKeySegment(n)) continue;
    auto info = fs_->Stat(PathOf(rel + n));
    if (!info.ok()) {
      if (info.status().IsNotFound()) continue;
      return info.status();
    }
    if (!info->is_dir) return true;
    WMBT_ASSIGN_OR_RETURN(bool found, HasObject(rel + n + "/", depth + 1));
    if (found) return true;
  }
  return false;
}

}  // namespace wombatkv::fs_internal
