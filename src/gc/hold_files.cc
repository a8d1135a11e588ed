#include "gc/hold_files.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "base/crc32c.h"
#include "base/endian.h"
#include "wombatkv/object_store.h"

namespace wombatkv::gc {
namespace {

constexpr char kMagic[] = "WMBTHLD1";
constexpr size_t kMagicBytes = 8;
constexpr size_t kRecordHeaderBytes = 2 + 2 + ContentHash::kSize + 8 + 4;
constexpr std::string_view kNamePrefix = "held-";
constexpr std::string_view kUnreadableSuffix = ".unreadable";

// The seq of a hold file's name ("held-<seq>"), or nothing for any other name.
std::optional<uint64_t> SeqOf(std::string_view name) {
  if (!name.starts_with(kNamePrefix)) return std::nullopt;
  name.remove_prefix(kNamePrefix.size());
  uint64_t seq = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), seq);
  if (ec != std::errc() || end != name.data() + name.size() || name.empty()) return std::nullopt;
  return seq;
}

}  // namespace

HoldFiles::File::~File() { owner_->Remove(path_); }

void HoldFiles::Remove(const std::string& path) {
  if (closing_) return;
  // A file that stays (the delete failed) is only read again by the next collector, which
  // re-checks its blobs once more: harmless.
  (void)fs_->DeleteFile(path);
}

void HoldFiles::Close() { closing_ = true; }

Status HoldFiles::MakeDir() {
  if (dir_made_) return Status::Ok();
  WMBT_RETURN_IF_ERROR(fs_->CreateDirs(dir_));
  dir_made_ = true;
  return Status::Ok();
}

Result<std::shared_ptr<HoldFiles::File>> HoldFiles::Write(
    const std::vector<const HeldBlob*>& blobs) {
  WMBT_RETURN_IF_ERROR(MakeDir());
  std::vector<uint8_t> head(kMagicBytes + 4);
  std::memcpy(head.data(), kMagic, kMagicBytes);
  StoreLe32(head.data() + kMagicBytes, static_cast<uint32_t>(blobs.size()));
  // Each record's header and names, then its kept bytes as a view: the bytes are not copied.
  std::vector<std::vector<uint8_t>> record_heads;
  record_heads.reserve(blobs.size());
  for (const HeldBlob* b : blobs) {
    const OrphanBlob& o = b->orphan;
    std::vector<uint8_t> r(kRecordHeaderBytes + o.ns.size() + o.key.size());
    uint8_t* p = r.data();
    StoreLe16(p, static_cast<uint16_t>(o.ns.size()));
    StoreLe16(p + 2, static_cast<uint16_t>(o.key.size()));
    std::memcpy(p + 4, o.hash.data(), ContentHash::kSize);
    StoreLe64(p + 4 + ContentHash::kSize, o.bytes);
    StoreLe32(p + 12 + ContentHash::kSize, static_cast<uint32_t>(b->object->size()));
    std::memcpy(p + kRecordHeaderBytes, o.ns.data(), o.ns.size());
    std::memcpy(p + kRecordHeaderBytes + o.ns.size(), o.key.data(), o.key.size());
    record_heads.push_back(std::move(r));
  }
  std::vector<ByteView> parts{ByteView(head.data(), head.size())};
  for (size_t i = 0; i < blobs.size(); ++i) {
    parts.emplace_back(record_heads[i].data(), record_heads[i].size());
    parts.push_back(blobs[i]->object->view());
  }
  uint32_t crc = 0;
  for (const ByteView& v : parts) crc = Crc32cAppend(crc, v.data(), v.size());
  uint8_t tail[4];
  StoreLe32(tail, crc);
  parts.emplace_back(tail, sizeof tail);
  const std::string path = dir_ + "/" + std::string(kNamePrefix) + std::to_string(next_seq_++);
  WMBT_RETURN_IF_ERROR(fs_->WriteFileAtomic(path, parts, /*sync=*/true));
  return std::make_shared<File>(this, path);
}

size_t HoldFiles::Count(FileSystem* fs, const std::string& dir) {
  auto names = fs->ListDir(dir);
  if (!names.ok()) return 0;
  return std::count_if(names->begin(), names->end(),
                       [](const std::string& n) { return SeqOf(n).has_value(); });
}

Result<std::vector<HoldFiles::Leftover>> HoldFiles::TakeLeftovers(
    std::vector<std::string>* problems) {
  std::vector<Leftover> out;
  auto names = fs_->ListDir(dir_);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return out;
    return names.status().WithContext("listing the collector's hold files in " + dir_);
  }
  dir_made_ = true;
  std::vector<std::pair<uint64_t, std::string>> files;
  for (const std::string& name : *names) {
    if (auto seq = SeqOf(name)) {
      files.emplace_back(*seq, name);
    } else if (name.ends_with(kUnreadableSuffix)) {
      // A file set aside earlier keeps its number: a new file of that number, damaged too, would
      // replace it when set aside.
      std::string_view base(name);
      base.remove_suffix(kUnreadableSuffix.size());
      if (auto aside = SeqOf(base)) next_seq_ = std::max(next_seq_, *aside + 1);
    }
  }
  std::sort(files.begin(), files.end());
  // Every file is read before any File handle exists: a handle dropped on an error below would
  // remove its file unchecked.
  std::vector<std::pair<std::string, std::vector<HeldBlob>>> read;
  for (const auto& [seq, name] : files) {
    next_seq_ = std::max(next_seq_, seq + 1);
    const std::string path = dir_ + "/" + name;
    auto bytes = fs_->ReadFile(path, 0, kToEnd);
    if (!bytes.ok()) return bytes.status().WithContext("reading the hold file " + path);
    auto blobs = DecodeHoldFile(*bytes, path);
    if (!blobs.ok()) {
      const std::string aside = path + std::string(kUnreadableSuffix);
      const Status moved =
          fs_->WriteFileAtomic(aside, std::vector<ByteView>{(*bytes)->view()}, true);
      if (moved.ok()) (void)fs_->DeleteFile(path);
      problems->push_back(blobs.status().message() + ": its blobs cannot be re-checked; kept as " +
                          (moved.ok() ? aside : path) +
                          " (run `wombatkv audit` to find chains that name a missing blob)");
      continue;
    }
    if (blobs->empty()) {
      (void)fs_->DeleteFile(path);  // nothing to re-check (never written so)
      continue;
    }
    read.emplace_back(path, std::move(blobs).value());
  }
  for (auto& [path, blobs] : read) {
    auto file = std::make_shared<File>(this, path);
    for (HeldBlob& b : blobs) out.push_back(Leftover{std::move(b), file});
  }
  return out;
}

Result<std::vector<HeldBlob>> DecodeHoldFile(const std::shared_ptr<Buffer>& file,
                                             const std::string& what) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption("hold file " + what + " " + why);
  };
  const uint8_t* p = file->data();
  const size_t n = file->size();
  if (n < kMagicBytes + 4 + 4 || std::memcmp(p, kMagic, kMagicBytes) != 0) {
    return bad("is not a hold file (no WMBTHLD1 header)");
  }
  if (Crc32c(p, n - 4) != LoadLe32(p + n - 4)) return bad("fails its CRC32C (torn or damaged)");
  const uint32_t count = LoadLe32(p + kMagicBytes);
  size_t at = kMagicBytes + 4;
  const size_t end = n - 4;
  std::vector<HeldBlob> out;
  for (uint32_t i = 0; i < count; ++i) {
    if (end - at < kRecordHeaderBytes) return bad("ends inside record " + std::to_string(i));
    const uint8_t* r = p + at;
    const size_t ns_bytes = LoadLe16(r), key_bytes = LoadLe16(r + 2);
    const uint32_t kept = LoadLe32(r + 12 + ContentHash::kSize);
    if (end - at - kRecordHeaderBytes < ns_bytes + key_bytes + uint64_t{kept}) {
      return bad("ends inside record " + std::to_string(i));
    }
    HeldBlob b;
    b.orphan.ns.assign(reinterpret_cast<const char*>(r + kRecordHeaderBytes), ns_bytes);
    if (!ValidateNamespace(b.orphan.ns).ok()) {
      return bad("names no valid namespace in record " + std::to_string(i));
    }
    b.orphan.hash = ContentHash::FromBytes({r + 4, ContentHash::kSize});
    b.orphan.bytes = LoadLe64(r + 4 + ContentHash::kSize);
    at += kRecordHeaderBytes;
    b.orphan.key.assign(reinterpret_cast<const char*>(p + at + ns_bytes), key_bytes);
    at += ns_bytes + key_bytes;
    b.object = Buffer::Adopt(file->data() + at, kept, [file] {});
    at += kept;
    out.push_back(std::move(b));
  }
  if (at != end) return bad("has bytes after its last record");
  return out;
}

}  // namespace wombatkv::gc
