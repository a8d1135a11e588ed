// RocksDbMetaStore: the L1 plane on RocksDB. RocksDB types and statuses stay in this file; every
// rocksdb::Status is converted at this edge into a Status that names the directory and what to do.
//
// Stored value = caller value || CRC32C(key || value), 4 bytes little-endian. Covering the key
// catches a value that ends up under another key, not just flipped bits.
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "base/crc32c.h"
#include "base/hex.h"
#include "base/thread_name.h"
#include "meta/meta_store.h"
#include "meta/rocksdb_info_log.h"
#include "meta/rocksdb_test_hooks.h"

namespace wombatkv {
namespace {

constexpr size_t kCrcBytes = 4;
constexpr size_t kErrorKeyBytesMax = 64;  // keys longer than this are cut in error messages
constexpr size_t kBlockCacheBytes = 32u << 20;
constexpr size_t kWriteBufferBytes = 32u << 20;
constexpr int kOpenFilesMax = 512;
constexpr int kBackgroundJobsMax = 2;
constexpr uint64_t kManifestBytesMax = 64ull << 20;  // bounds MANIFEST replay on open
constexpr uint64_t kWalTotalBytesMax = 128ull << 20;
constexpr uint64_t kInfoLogBytesMax = 8u << 20;  // LOG rolls to LOG.old past this
constexpr char kOwnerFileName[] = "WOMBATKV_OWNER";

uint32_t ValueCrc(std::string_view key, std::string_view value) {
  uint32_t crc = Crc32c(reinterpret_cast<const uint8_t*>(key.data()), key.size());
  return Crc32cAppend(crc, reinterpret_cast<const uint8_t*>(value.data()), value.size());
}

void EncodeCrc(uint32_t crc, char* out) {
  for (size_t i = 0; i < kCrcBytes; ++i) out[i] = static_cast<char>(crc >> (8 * i));
}

uint32_t DecodeCrc(const char* in) {
  uint32_t crc = 0;
  for (size_t i = 0; i < kCrcBytes; ++i) crc |= uint32_t{static_cast<uint8_t>(in[i])} << (8 * i);
  return crc;
}

std::string KeyHex(std::string_view key) {
  const size_t n = std::min(key.size(), kErrorKeyBytesMax);
  std::string out = HexEncode({reinterpret_cast<const uint8_t*>(key.data()), n});
  if (n < key.size()) out += "...(" + std::to_string(key.size()) + " bytes)";
  return out;
}

// The smallest string greater than every string starting with `prefix`, or "" if there is none
// (prefix empty or all 0xff).
std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<uint8_t>(s.back()) == 0xff) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<uint8_t>(s.back()) + 1);
  return s;
}

rocksdb::Slice ToSlice(std::string_view v) { return rocksdb::Slice(v.data(), v.size()); }
std::string_view ToView(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

bool IsLockError(const rocksdb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string m = s.ToString();
  return m.find("/LOCK") != std::string::npos &&
         (m.find("lock") != std::string::npos || m.find("Lock") != std::string::npos);
}

std::string OwnerNote() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "?");
  return "pid " + std::to_string(getpid()) + " on host " + host;
}

class RocksDbMetaStore final : public MetaStore {
 public:
  RocksDbMetaStore(std::string dir, std::unique_ptr<rocksdb::DB> db)
      : dir_(std::move(dir)), db_(std::move(db)) {}

  ~RocksDbMetaStore() override {
    // Flushing the memtable now means the next open replays no WAL, which keeps reopen fast.
    // Errors are not fatal here: the WAL still holds everything that was written.
    rocksdb::FlushOptions fo;
    fo.wait = true;
    (void)db_->Flush(fo);
    (void)db_->Close();
  }

  Status Write(const MetaWriteBatch& batch, bool sync) override {
    rocksdb::WriteBatch wb;
    for (const auto& [key, value] : batch.ops()) {
      rocksdb::Status s;
      if (value.has_value()) {
        char crc[kCrcBytes];
        EncodeCrc(ValueCrc(key, *value), crc);
        const rocksdb::Slice key_part = ToSlice(key);
        const rocksdb::Slice value_parts[2] = {ToSlice(*value), rocksdb::Slice(crc, kCrcBytes)};
        s = wb.Put(rocksdb::SliceParts(&key_part, 1), rocksdb::SliceParts(value_parts, 2));
      } else {
        s = wb.Delete(ToSlice(key));
      }
      if (!s.ok()) return Convert(s, "building a write batch");
    }
    rocksdb::WriteOptions wo;
    wo.sync = sync;
#if defined(__SANITIZE_THREAD__)
    // Debian's librocksdb is not instrumented: concurrent writes form a write group whose leader
    // writes each follower's batch (its sequence number), synchronized where TSAN cannot see, so
    // TSAN reported races on our stack batches. Under TSAN, writes go one at a time.
    std::lock_guard<std::mutex> one_at_a_time(tsan_write_mu_);
#endif
    return Convert(db_->Write(wo, &wb), "writing");
  }

  Result<std::string> Get(std::string_view key) override {
    rocksdb::PinnableSlice stored;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), ToSlice(key),
                                 &stored);
    if (s.IsNotFound()) return Status::NotFound("L1 has no key " + KeyHex(key));
    if (!s.ok()) return Convert(s, "reading key " + KeyHex(key));
    std::string_view value;
    WMBT_RETURN_IF_ERROR(Unframe(key, ToView(stored), &value));
    return std::string(value);
  }

  Status Scan(std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override {
    const std::string upper = PrefixSuccessor(prefix);
    const rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions ro;
    if (!upper.empty()) ro.iterate_upper_bound = &upper_slice;
    // A full scan (bootstrap) reads everything once: keep it from evicting the hot blocks.
    ro.fill_cache = !prefix.empty();
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
      const std::string_view key = ToView(it->key());
      // The upper bound already stops the scan; this also covers the all-0xff prefix.
      if (!key.starts_with(prefix)) break;
      std::string_view value;
      WMBT_RETURN_IF_ERROR(Unframe(key, ToView(it->value()), &value));
      if (!fn(key, value)) return Status::Ok();
    }
    if (!it->status().ok()) return Convert(it->status(), "scanning prefix " + KeyHex(prefix));
    return Status::Ok();
  }

  Status DeletePrefix(std::string_view prefix) override {
    rocksdb::WriteBatch wb;
    std::string upper = PrefixSuccessor(prefix);
    rocksdb::Status s;
    if (!upper.empty()) {
      s = wb.DeleteRange(ToSlice(prefix), upper);
    } else {
      // No successor exists (empty or all-0xff prefix): a range tombstone up to the last key,
      // plus a point delete of that key, in one atomic batch.
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
      it->SeekToLast();
      if (!it->Valid()) {
        if (!it->status().ok()) return Convert(it->status(), "deleting prefix " + KeyHex(prefix));
        return Status::Ok();  // empty database
      }
      const std::string last = it->key().ToString();
      if (!std::string_view(last).starts_with(prefix)) return Status::Ok();
      if (last > prefix) s = wb.DeleteRange(ToSlice(prefix), last);
      if (s.ok()) s = wb.Delete(last);
    }
    if (s.ok()) s = db_->Write(rocksdb::WriteOptions(), &wb);
    if (!s.ok()) return Convert(s, "deleting prefix " + KeyHex(prefix));
    return Status::Ok();
  }

 private:
  // Checks the CRC and strips it. Corruption names the key, never the bad value.
  Status Unframe(std::string_view key, std::string_view stored, std::string_view* value) const {
    if (stored.size() < kCrcBytes) {
      return Status::Corruption("L1 value for key " + KeyHex(key) + " in " + dir_ + " is " +
                                std::to_string(stored.size()) +
                                " bytes, too short for its CRC; delete the L1 directory and "
                                "restart: it will be rebuilt from L2");
    }
    *value = stored.substr(0, stored.size() - kCrcBytes);
    const uint32_t want = DecodeCrc(stored.data() + value->size());
    if (ValueCrc(key, *value) != want) {
      return Status::Corruption("L1 value for key " + KeyHex(key) + " in " + dir_ +
                                " fails its CRC32C check; delete the L1 directory and restart: "
                                "it will be rebuilt from L2");
    }
    return Status::Ok();
  }

  Status Convert(const rocksdb::Status& s, std::string_view what) const;

  const std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;  // the block cache is owned by its table factory
#if defined(__SANITIZE_THREAD__)
  std::mutex tsan_write_mu_;
#endif
};

Status ConvertRocksStatus(const rocksdb::Status& s, const std::string& dir, std::string_view what,
                          bool opening) {
  if (s.ok()) return Status::Ok();
  const std::string detail = std::string(what) + " (" + s.ToString() + ")";
  if (s.IsNotFound()) return Status::NotFound("L1 " + dir + ": " + detail);
  if (s.IsCorruption()) {
    return Status::Corruption("L1 directory " + dir + " is corrupt: " + detail +
                              "; stop the process, delete the directory and restart: the L1 is "
                              "rebuilt from L2");
  }
  if (s.IsNoSpace()) {
    return Status::ResourceExhausted("L1 directory " + dir + " is out of disk space: " + detail +
                                     "; free space on that disk");
  }
  if (s.IsIOError() && IsLockError(s)) {
    return Status::FailedPrecondition("L1 directory " + dir +
                                      " is in use by another process or store: " + detail +
                                      "; stop the other owner or configure a different L1 "
                                      "directory");
  }
  if (s.IsBusy() || s.IsTryAgain() || s.IsTimedOut() || s.IsIncomplete()) {
    return Status::Unavailable("L1 " + dir + " is busy: " + detail + "; retry");
  }
  if (s.IsIOError()) {
    std::error_code ec;
    if (opening && s.IsPathNotFound() && std::filesystem::exists(dir + "/CURRENT", ec)) {
      // A file an existing L1 names is gone (its MANIFEST, a table file): damage, as Corruption.
      return Status::Corruption("L1 directory " + dir + " is missing a file: " + detail);
    }
    if (opening) {
      return Status::FailedPrecondition("cannot open L1 directory " + dir + ": " + detail +
                                        "; check that it is a directory this process can write");
    }
    return Status::Unavailable("I/O error in L1 directory " + dir + ": " + detail +
                               "; check the disk");
  }
  if (s.IsInvalidArgument()) {
    if (opening) {
      return Status::FailedPrecondition("cannot open L1 directory " + dir + ": " + detail +
                                        "; if it is not a WombatKV L1, point the L1 elsewhere; "
                                        "otherwise delete it and it will be rebuilt from L2");
    }
    return Status::InvalidArgument("L1 " + dir + ": " + detail);
  }
  if (s.IsNotSupported() || s.IsShutdownInProgress()) {
    return Status::FailedPrecondition("L1 " + dir + ": " + detail);
  }
  return Status::Internal("L1 " + dir + ": " + detail);
}

Status RocksDbMetaStore::Convert(const rocksdb::Status& s, std::string_view what) const {
  return ConvertRocksStatus(s, dir_, what, /*opening=*/false);
}

rocksdb::CompressionType PickCompression(
    const std::vector<rocksdb::CompressionType>& supported,
    std::initializer_list<rocksdb::CompressionType> preference) {
  for (rocksdb::CompressionType c : preference) {
    if (std::find(supported.begin(), supported.end(), c) != supported.end()) return c;
  }
  return rocksdb::kNoCompression;
}

rocksdb::Options MakeOptions(const std::string& dir) {
  rocksdb::Options o;
  // Not RocksDB's file logger: it aborts on its next line once a write failed (disk full).
  o.info_log = std::make_shared<RocksDbInfoLog>(dir, kInfoLogBytesMax);
  o.create_if_missing = true;
  o.paranoid_checks = true;
  o.max_open_files = kOpenFilesMax;
  o.max_background_jobs = kBackgroundJobsMax;
  o.write_buffer_size = kWriteBufferBytes;
  o.max_total_wal_size = kWalTotalBytesMax;
  o.max_manifest_file_size = kManifestBytesMax;
  o.level_compaction_dynamic_level_bytes = true;
  // L1 is written on every publish and read only when the store opens (scans) and by offline
  // tools: a vector memtable appends each write and sorts once, at flush or for an iterator,
  // where the default skiplist paid a sorted insert per write — the costliest part of a small
  // durable save's L1 write (BENCHMARKS.md, "Session 20"). Vector memtables take writes from one
  // thread at a time. A Get or iterator copies and sorts the live memtable: fine at open, costly
  // for any read at run time (there is none: Capacity.NothingAnOpenStoreDoesReadsL1).
  o.memtable_factory = std::make_shared<rocksdb::VectorRepFactory>();
  o.allow_concurrent_memtable_write = false;

  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  o.compression = PickCompression(supported, {rocksdb::kLZ4Compression});
  o.bottommost_compression =
      PickCompression(supported, {rocksdb::kZSTD, rocksdb::kLZ4Compression});

  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(kBlockCacheBytes);
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

}  // namespace

Result<std::unique_ptr<MetaStore>> OpenRocksDbMetaStore(const std::string& dir) {
  if (dir.empty()) return Status::InvalidArgument("L1 directory path is empty");

  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(dir, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_directory(st)) {
    return Status::FailedPrecondition("L1 path " + dir +
                                      " exists but is not a directory; point the L1 at a "
                                      "directory (or remove that file)");
  }
  ec.clear();
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::FailedPrecondition("cannot create L1 directory " + dir + ": " + ec.message() +
                                      "; check the path and its permissions");
  }

  rocksdb::DB* raw = nullptr;
  // RocksDB's timer thread, started by the process's first open, takes the name of the thread
  // that opens: "wmbt-l1" in `top -H`, not a second "main" thread (docs/daemon.md, "Threads").
  const std::string caller = ThisThreadName();
  NameThisThread("wmbt-l1");
  rocksdb::Status s = rocksdb::DB::Open(MakeOptions(dir), dir, &raw);
  NameThisThread(caller);
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::Env* env = rocksdb::Env::Default();
  const std::string owner_path = dir + "/" + kOwnerFileName;
  if (!s.ok()) {
    Status st2 = ConvertRocksStatus(s, dir, "opening", /*opening=*/true);
    if (st2.code() == Code::kFailedPrecondition && IsLockError(s)) {
      std::string owner;
      if (rocksdb::ReadFileToString(env, owner_path, &owner).ok() && !owner.empty()) {
        st2 = Status(st2.code(), st2.message() + " (last recorded owner: " + owner + ")");
      }
    }
    return st2;
  }
  // Best effort: the note only improves the message a later contender sees.
  (void)rocksdb::WriteStringToFile(env, OwnerNote(), owner_path, /*should_sync=*/false);
  return std::unique_ptr<MetaStore>(
      std::make_unique<RocksDbMetaStore>(dir, std::move(db)));
}

namespace {
Status WithRawDb(const std::string& dir, const std::function<rocksdb::Status(rocksdb::DB*)>& fn) {
  rocksdb::Options o;
  o.create_if_missing = false;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, dir, &raw);
  if (!s.ok()) return ConvertRocksStatus(s, dir, "opening raw (test hook)", true);
  std::unique_ptr<rocksdb::DB> db(raw);
  s = fn(db.get());
  rocksdb::Status c = db->Close();
  if (s.ok()) s = c;
  return ConvertRocksStatus(s, dir, "raw access (test hook)", false);
}
}  // namespace

Status WriteRawRocksDbValueForTest(const std::string& dir, std::string_view key,
                                   std::string_view stored) {
  return WithRawDb(dir, [&](rocksdb::DB* db) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return db->Put(wo, ToSlice(key), ToSlice(stored));
  });
}

Result<std::string> ReadRawRocksDbValueForTest(const std::string& dir, std::string_view key) {
  std::string out;
  Status s = WithRawDb(dir, [&](rocksdb::DB* db) {
    return db->Get(rocksdb::ReadOptions(), ToSlice(key), &out);
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace wombatkv
