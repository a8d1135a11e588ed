// Hold files: the bytes an orphan collector keeps for its re-check (R3, gc/orphan_gc.h), also on
// local disk, so that a collector that dies between its deletes and its re-check leaves them for
// the next one (docs/layout.md §7, "A collector that dies mid-pass").
//
// One file per chunk of deletes, written and synced before the chunk's first delete:
//   "WMBTHLD1" | u32 count | count × record | u32 CRC32C of everything before it
//   record: u16 ns bytes | u16 key bytes | 20-byte content hash | u64 object size in L2 |
//           u32 kept bytes | ns | key | kept bytes
// (integers little-endian). The kept bytes are the blob as read from L2 (its envelope checks
// them against the hash). A file goes once every blob in it has been re-checked and either
// stayed deleted or was put back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gc/orphan_blob.h"
#include "wombatkv/buffer.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"

namespace wombatkv::gc {

struct HeldBlob {
  OrphanBlob orphan;  // ns, key, hash and size (the age is not kept)
  std::shared_ptr<Buffer> object;
};

// The hold files of one collector, in a directory no other collector uses while it runs. Used
// from the collector's thread only.
class HoldFiles {
 public:
  HoldFiles(FileSystem* fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}

  // One written file. Removed when the last reference to it goes — once every blob in it has
  // been re-checked and, if needed, put back — unless the collector is closing (Close): the
  // blobs then still await their re-check or restore, which the next collector does.
  class File {
   public:
    File(HoldFiles* owner, std::string path) : owner_(owner), path_(std::move(path)) {}
    ~File();
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    const std::string& path() const { return path_; }

   private:
    HoldFiles* const owner_;
    const std::string path_;
  };

  // Writes the blobs' file and syncs it and its directory entry before returning.
  Result<std::shared_ptr<File>> Write(const std::vector<const HeldBlob*>& blobs);

  // The files an earlier collector left (it died, or closed with blobs not yet put back): their
  // blobs, each with the file it came from. A file that does not decode is reported in
  // `problems` and left in place, named so that it is not read again.
  struct Leftover {
    HeldBlob blob;
    std::shared_ptr<File> file;
  };
  Result<std::vector<Leftover>> TakeLeftovers(std::vector<std::string>* problems);

  // How many hold files `dir` holds (leftovers, when no collector runs on it); 0 if it does not
  // exist or cannot be listed.
  static size_t Count(FileSystem* fs, const std::string& dir);

  // From now on a File going away leaves its file on disk (the collector is being destroyed).
  void Close();

  const std::string& dir() const { return dir_; }

 private:
  void Remove(const std::string& path);
  Status MakeDir();

  FileSystem* const fs_;
  const std::string dir_;
  bool closing_ = false;
  bool dir_made_ = false;
  uint64_t next_seq_ = 0;  // names held-<seq>; starts past every leftover's
};

// A hold file's blobs (their kept bytes are views into `file`); Corruption naming `what` if it
// is torn, damaged or not a hold file.
Result<std::vector<HeldBlob>> DecodeHoldFile(const std::shared_ptr<Buffer>& file,
                                             const std::string& what);

}  // namespace wombatkv::gc
