// Object key rules (object_store.h) and the List paging rules every ObjectStore implementation
// shares, so that their listings agree entry for entry.
//
// List order and continuation:
//   1. Entries are keys and, with the "/" delimiter, common prefixes (which end in '/'); a page
//      holds them in byte-wise lexicographic order.
//   2. A continuation token is the last entry of the previous page. An entry is returned only if
//      it is not SkippedByToken: it sorts after the token and, when the token is a common prefix,
//      it is not inside it (those keys were reported as the prefix).
//   3. next_token is set only if at least one more entry exists (a page is never empty unless the
//      whole listing is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/object_store.h"

namespace wombatkv {

inline constexpr size_t kObjectKeyBytesMax = 1024;

// "<prefix><a>-<b>-<c>", the numbers in lowercase hex without padding: the form of the local
// store's ETags (a file's, fs_object_store_impl.h; a packed object's, packed_index.h).
std::string HexEtag(std::string_view prefix, uint64_t a, uint64_t b, uint64_t c);

// A single key segment: [A-Za-z0-9._-]+, not "." or "..".
bool IsValidKeySegment(std::string_view segment);

// A List prefix: InvalidArgument unless it could begin a valid key (its complete segments are
// valid, the last partial one uses the key alphabet, no leading '/', at most 1024 bytes).
Status ValidateListPrefix(std::string_view prefix);

// Validates List arguments and returns the page size: max_keys clamped to 1000 (as S3);
// InvalidArgument for max_keys == 0 or a delimiter other than "" and "/".
Result<size_t> CheckListArgs(std::string_view prefix, std::string_view delimiter,
                             size_t max_keys);

// Rule 2 above, for a key or a common prefix.
inline bool SkippedByToken(std::string_view entry, std::string_view token) {
  if (token.empty()) return false;
  return entry <= token || (token.back() == '/' && entry.starts_with(token));
}

// True if every key beginning with `dir` (which ends in '/') is SkippedByToken: lets a listing
// skip a whole directory without reading it.
inline bool SubtreeSkippedByToken(std::string_view dir, std::string_view token) {
  if (token.empty()) return false;
  if (token.back() == '/' && dir.starts_with(token)) return true;
  return dir < token && !token.starts_with(dir);
}

// Collects one List page (rules 1 and 3). Entries must be offered in order.
class ListPageBuilder {
 public:
  explicit ListPageBuilder(size_t max_entries) : max_(max_entries) {}

  // Each returns false once the page is full: the entry offered did not fit, and proves the
  // listing continues. The caller stops offering.
  bool AddObject(ObjectInfo info) {
    if (!Room()) return false;
    last_ = info.key;
    page_.objects.push_back(std::move(info));
    return true;
  }
  bool AddPrefix(std::string prefix) {
    if (!Room()) return false;
    last_ = prefix;
    page_.common_prefixes.push_back(std::move(prefix));
    return true;
  }
  bool full() const { return truncated_; }
  // Entries beyond those offered exist: if the page is at its size, it is truncated (an entry
  // that does not fit would have been offered otherwise).
  void NoteMore() {
    if (count_ == max_) truncated_ = true;
  }

  ListPage Finish() && {
    if (truncated_) page_.next_token = last_;
    return std::move(page_);
  }

 private:
  bool Room() {
    if (count_ == max_) {
      truncated_ = true;
      return false;
    }
    ++count_;
    return true;
  }
  size_t max_;
  size_t count_ = 0;
  bool truncated_ = false;
  std::string last_;
  ListPage page_;
};

}  // namespace wombatkv
