#include "object/packed_snapshot.h"

#include <cstring>
#include <set>

#include "base/crc32c.h"
#include "base/endian.h"
#include "object/journal.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

constexpr std::string_view kMagic = "WMBTPIX1";
constexpr size_t kHeaderBytes = 40;
constexpr size_t kFileBytes = 16;
constexpr size_t kEntryFixedBytes = 2 + 5 * 8 + 2 * 4;
constexpr size_t kCrcBytes = 4;
// The header's offsets of the fields PackedSnapshotWriter::Finish fills in.
constexpr size_t kSyncedAt = 16;
constexpr size_t kEntriesAt = 32;

void Put64(std::string& out, uint64_t v) {
  uint8_t b[8];
  StoreLe64(b, v);
  out.append(reinterpret_cast<const char*>(b), sizeof b);
}

void Put16(std::string& out, uint16_t v) {
  uint8_t b[2];
  StoreLe16(b, v);
  out.append(reinterpret_cast<const char*>(b), sizeof b);
}

void Put32(std::string& out, uint32_t v) {
  uint8_t b[4];
  StoreLe32(b, v);
  out.append(reinterpret_cast<const char*>(b), sizeof b);
}

// Reads fixed-width fields in order from a span whose length was checked beforehand.
class Reader {
 public:
  explicit Reader(const uint8_t* p) : p_(p) {}
  uint64_t U64() { return LoadLe64(Take(8)); }
  uint32_t U32() { return LoadLe32(Take(4)); }
  uint16_t U16() { return LoadLe16(Take(2)); }
  std::string_view Chars(size_t n) { return {reinterpret_cast<const char*>(Take(n)), n}; }
  size_t consumed(const uint8_t* start) const { return static_cast<size_t>(p_ - start); }

 private:
  const uint8_t* Take(size_t n) {
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  const uint8_t* p_;
};

Status Bad(const std::string& what) {
  return Status::Corruption("packed-index snapshot: " + what);
}

}  // namespace

PackedSnapshotWriter::PackedSnapshotWriter(const PackedSnapshotHeader& header) {
  out_.append(kMagic);
  Put64(out_, header.through_lsn);
  Put64(out_, 0);  // synced LSN: Finish
  Put64(out_, header.file_bytes.size());
  Put64(out_, 0);  // entry count: Finish
  for (const auto& [first, bytes] : header.file_bytes) {
    Put64(out_, first);
    Put64(out_, bytes);
  }
}

void PackedSnapshotWriter::Add(std::string_view key, const PackedEntry& e) {
  Put16(out_, static_cast<uint16_t>(key.size()));
  out_.append(key);
  Put64(out_, e.segment);
  Put64(out_, e.offset);
  Put64(out_, e.lsn);
  Put32(out_, e.record_bytes);
  Put32(out_, e.size);
  Put64(out_, e.etag_id);
  Put64(out_, e.modified_us);
  ++entries_;
}

std::string PackedSnapshotWriter::Finish(uint64_t synced_lsn) {
  StoreLe64(reinterpret_cast<uint8_t*>(out_.data() + kSyncedAt), synced_lsn);
  StoreLe64(reinterpret_cast<uint8_t*>(out_.data() + kEntriesAt), entries_);
  Put32(out_, Crc32c(reinterpret_cast<const uint8_t*>(out_.data()), out_.size()));
  return std::move(out_);
}

std::string EncodePackedSnapshot(const PackedSnapshotHeader& header, const PackedIndex& index) {
  PackedSnapshotWriter writer(header);
  index.ForEach([&](std::string_view key, const PackedEntry& e) { writer.Add(key, e); });
  return writer.Finish(header.synced_lsn);
}

Result<PackedSnapshotHeader> DecodePackedSnapshot(ByteView bytes, PackedIndex* index) {
  index->Clear();
  if (bytes.size() < kHeaderBytes + kCrcBytes ||
      std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    return Bad("not a snapshot (" + std::to_string(bytes.size()) + " bytes, wrong magic or short)");
  }
  const size_t body = bytes.size() - kCrcBytes;
  if (Crc32c(bytes.data(), body) != LoadLe32(bytes.data() + body)) return Bad("crc mismatch");
  const uint8_t* start = bytes.data();
  Reader r(start + kMagic.size());
  PackedSnapshotHeader header;
  header.encoded_bytes = bytes.size();
  header.through_lsn = r.U64();
  header.synced_lsn = r.U64();
  if (header.synced_lsn < header.through_lsn) return Bad("synced LSN before its through LSN");
  const uint64_t files = r.U64();
  const uint64_t entries = r.U64();
  // Counts checked against the length before anything is allocated or read.
  if (files > (body - kHeaderBytes) / kFileBytes ||
      entries > (body - kHeaderBytes - files * kFileBytes) / (kEntryFixedBytes + 1)) {
    return Bad("counts exceed its length");
  }
  for (uint64_t i = 0; i < files; ++i) {
    const uint64_t first = r.U64();
    header.file_bytes[first] = r.U64();
  }
  auto fail = [&](const std::string& what) {
    index->Clear();
    return Bad(what);
  };
  for (uint64_t i = 0; i < entries; ++i) {
    if (body - r.consumed(start) < kEntryFixedBytes) return fail("entries exceed its length");
    const size_t key_bytes = r.U16();
    if (body - r.consumed(start) < key_bytes + kEntryFixedBytes - 2) {
      return fail("entries exceed its length");
    }
    const std::string_view key = r.Chars(key_bytes);
    PackedEntry e;
    e.segment = r.U64();
    e.offset = r.U64();
    e.lsn = r.U64();
    e.record_bytes = r.U32();
    e.size = r.U32();
    e.etag_id = r.U64();
    e.modified_us = r.U64();
    if (!ValidateObjectKey(key).ok() || e.lsn < e.segment || e.size >= e.record_bytes) {
      return fail("entry " + std::to_string(i) + " is not sound");
    }
    index->Set(key, e);
  }
  if (r.consumed(start) != body) {
    return fail(std::to_string(body - r.consumed(start)) + " bytes after the last entry");
  }
  return header;
}

std::optional<PackedSnapshotHeader> LoadPackedSnapshot(FileSystem* fs, const std::string& root,
                                                       uint64_t applied_through,
                                                       const JournalFileList& files,
                                                       PackedIndex* index,
                                                       std::string* set_aside) {
  auto bytes = fs->ReadFile(root + "/" + std::string(kPackedSnapshotName), 0, kToEnd);
  if (!bytes.ok()) {
    if (!bytes.status().IsNotFound()) *set_aside = bytes.status().ToString();
    return std::nullopt;
  }
  auto header = DecodePackedSnapshot((*bytes)->view(), index);
  if (!header.ok()) {
    *set_aside = header.status().message();
    return std::nullopt;
  }
  const uint64_t c = header->through_lsn;
  auto reject = [&](const std::string& why) -> std::optional<PackedSnapshotHeader> {
    index->Clear();
    *set_aside = "the snapshot through LSN " + std::to_string(c) + " " + why;
    return std::nullopt;
  };
  if (c > applied_through) {
    return reject("is past the checkpoint (LSN " + std::to_string(applied_through) + ")");
  }
  bool next = false;
  bool later = false;
  for (const auto& [first, path] : files) {
    if (first <= c && !header->file_bytes.count(first)) {
      return reject("does not know journal file " + path);
    }
    next = next || first == c + 1;
    later = later || first > c + 1;
  }
  if (later && !next) return reject("has no journal file starting after it");
  return std::move(header).value();
}

std::string PackedSnapshotDisagreement(const PackedSnapshotHeader& header,
                                       const PackedIndex& index, const JournalFileList& files,
                                       uint64_t last_lsn) {
  if (last_lsn < header.synced_lsn) {
    return "reflects records up to LSN " + std::to_string(header.synced_lsn) +
           ", past the journal's end (LSN " + std::to_string(last_lsn) + ")";
  }
  std::set<uint64_t> present;
  for (const auto& f : files) present.insert(f.first);
  std::string why;
  index.ForEach([&](std::string_view key, const PackedEntry& e) {
    if (why.empty() && !present.count(e.segment)) {
      why = "names " + std::string(key) + " in journal file " + JournalFileName(e.segment) +
            ", which is gone";
    }
  });
  return why;
}

}  // namespace wombatkv
