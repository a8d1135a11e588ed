#include "object/packed_index.h"

#include "object/object_key.h"

namespace wombatkv {
namespace {

// The smallest string above every string starting with `prefix` (which ends in '/').
std::string PastPrefix(std::string_view prefix) {
  std::string s(prefix);
  s.back() = static_cast<char>('/' + 1);
  return s;
}

}  // namespace

std::string PackedEtag(const PackedEntry& e) {
  return HexEtag("p", e.etag_id, e.modified_us, e.size);
}

const PackedEntry* PackedIndex::Find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void PackedIndex::Unuse(const PackedEntry& e) {
  auto u = use_.find(e.segment);
  if (u != use_.end() && --u->second.records == 0) use_.erase(u);
  live_bytes_ -= e.record_bytes;
}

void PackedIndex::Set(std::string_view key, const PackedEntry& e) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    it = entries_.emplace(std::string(key), e).first;
    order_.Insert(&*it);
  } else {
    Unuse(it->second);
    it->second = e;
  }
  ++use_[e.segment].records;
  live_bytes_ += e.record_bytes;
}

bool PackedIndex::Erase(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Unuse(it->second);
  order_.Erase(&*it);  // before the entry it points at
  entries_.erase(it);
  return true;
}

void PackedIndex::Clear() {
  order_.Clear();
  entries_.clear();
  use_.clear();
  live_bytes_ = 0;
}

void PackedIndex::Apply(const ScannedRecord& r) {
  const JournalRecordView& rec = r.record;
  if (rec.op != JournalOp::kPutPacked) {
    Erase(rec.key);
    return;
  }
  PackedEntry e;
  e.segment = r.segment;
  e.offset = r.offset;
  e.lsn = rec.lsn;
  e.record_bytes = static_cast<uint32_t>(rec.encoded_bytes);
  e.size = static_cast<uint32_t>(rec.encoded_bytes - rec.value_offset - kPackedValuePrefixBytes);
  // A damaged record still names a version (its prefix unreliable): reads report the damage.
  if (!rec.value_ok || !DecodePackedPrefix(rec.value, &e.etag_id, &e.modified_us)) {
    e.etag_id = rec.lsn;
    e.modified_us = 0;
  }
  Set(rec.key, e);
}

uint64_t PackedIndex::LiveRecords(uint64_t segment) const {
  auto u = use_.find(segment);
  return u == use_.end() ? 0 : u->second.records;
}

void PackedIndex::ListInto(std::string_view prefix, bool group, std::string_view token,
                           size_t limit, std::vector<ListEntry>* out, bool* more) const {
  *more = false;
  auto it = order_.LowerBound(token.empty() || token < prefix ? prefix : token);
  while (it != order_.end() && (*it)->first.starts_with(prefix)) {
    const std::string& key = (*it)->first;
    const size_t slash = group ? key.find('/', prefix.size()) : std::string::npos;
    if (slash != std::string::npos) {
      std::string common = key.substr(0, slash + 1);
      if (!SkippedByToken(common, token)) {
        if (out->size() == limit) {
          *more = true;
          return;
        }
        out->push_back(ListEntry{common, true, {}});
      }
      it = order_.LowerBound(PastPrefix(common));
      continue;
    }
    if (!SkippedByToken(key, token)) {
      if (out->size() == limit) {
        *more = true;
        return;
      }
      const PackedEntry& e = (*it)->second;
      out->push_back(ListEntry{key, false, {key, e.size, PackedEtag(e), e.modified_us}});
    }
    ++it;
  }
}

Result<std::shared_ptr<Buffer>> ReadPackedRecord(FileSystem* fs, const std::string& path,
                                                 std::string_view key, const PackedEntry& e,
                                                 bool* damaged,
                                                 const FileSystem::ReadBuffers& buffers) {
  auto bytes = fs->ReadFileInto(path, e.offset, e.record_bytes, buffers);
  if (!bytes.ok()) return bytes.status();
  auto rec = DecodeJournalRecord((*bytes)->view(), e.lsn);
  const std::string where = "object " + std::string(key) + " (journal file " + path +
                            ", offset " + std::to_string(e.offset) + ")";
  if (!rec.ok()) return rec.status().WithContext(where);
  if (rec->key != key || rec->op != JournalOp::kPutPacked || rec->encoded_bytes != e.record_bytes) {
    return Status::Corruption(where + ": the record there is not this object's");
  }
  if (!rec->value_ok) {
    if (!damaged) return Status::Corruption(where + ": its bytes do not match their checksum");
    *damaged = true;
  }
  return std::move(bytes).value();
}

Result<ObjectData> ReadPacked(FileSystem* fs, const std::string& path, std::string_view key,
                              const PackedEntry& e, uint64_t offset, uint64_t length,
                              const FileSystem::ReadBuffers& buffers) {
  if (offset > e.size) {
    return Status::InvalidArgument("get " + std::string(key) + ": offset " +
                                   std::to_string(offset) + " is past the object size " +
                                   std::to_string(e.size));
  }
  WMBT_ASSIGN_OR_RETURN(auto record, ReadPackedRecord(fs, path, key, e, nullptr, buffers));
  const uint64_t n = std::min<uint64_t>(length, e.size - offset);
  uint8_t* start = record->data() + (e.record_bytes - e.size) + offset;
  ObjectData out;
  // A view into the record's buffer, which it keeps alive.
  out.bytes = Buffer::Adopt(start, n, [record] {});
  out.etag = PackedEtag(e);
  out.object_size = e.size;
  return out;
}

std::vector<ListEntry> UnionListings(std::vector<ListEntry> before, std::vector<ListEntry> after) {
  std::vector<ListEntry> out;
  out.reserve(before.size() + after.size());
  size_t i = 0, j = 0;
  while (i < before.size() || j < after.size()) {
    if (j == after.size() || (i < before.size() && before[i].name < after[j].name)) {
      out.push_back(std::move(before[i++]));
    } else {
      if (i < before.size() && before[i].name == after[j].name) ++i;
      out.push_back(std::move(after[j++]));
    }
  }
  return out;
}

ListPage MergeListings(std::vector<ListEntry> dir, bool dir_more, std::vector<ListEntry> packed,
                       bool packed_more, size_t page_size) {
  ListPageBuilder page(page_size);
  size_t i = 0, j = 0;
  while (i < dir.size() || j < packed.size()) {
    ListEntry* next;
    if (j == packed.size() || (i < dir.size() && dir[i].name < packed[j].name)) {
      next = &dir[i++];
    } else if (i == dir.size() || packed[j].name < dir[i].name) {
      next = &packed[j++];
    } else {  // one common prefix from both, or a key that is packed with a stale file beside it
      // (fs_object_store_journal.cc, CurrentLocked): the packed version stands
      next = &packed[j++];
      ++i;
    }
    const bool added = next->is_prefix ? page.AddPrefix(std::move(next->name))
                                       : page.AddObject(std::move(next->info));
    if (!added) return std::move(page).Finish();
  }
  // Each source stopped at its own limit: what it holds back sorts after all it gave, so the
  // page is complete as it is, and continues if either has more.
  if (dir_more || packed_more) page.NoteMore();
  return std::move(page).Finish();
}

}  // namespace wombatkv
