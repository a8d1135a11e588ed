// Runs the ObjectStore conformance suite against the in-memory and local-directory stores.
#include <unistd.h>

#include <atomic>

#include "object/object_store_conformance.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

// An FsObjectStore over a fresh directory that it deletes when destroyed; with `journal`, the
// journaled one (OpenJournaledFsObjectStore) with those options.
class ScratchFsObjectStore final : public ObjectStoreWrapper {
 public:
  explicit ScratchFsObjectStore(const FsJournalOptions* journal = nullptr) {
    static std::atomic<int> seq{0};
    dir_ = ::testing::TempDir() + "wombatkv_conformance_" + std::to_string(::getpid()) + "_" +
           std::to_string(seq++);
    EXPECT_TRUE(PosixFileSystem()->DeleteTree(dir_).ok());
    if (journal) {
      auto opened = OpenJournaledFsObjectStore(dir_, PosixFileSystem(), *journal);
      EXPECT_TRUE(opened.ok()) << opened.status().ToString();
      if (opened.ok()) inner_ = std::move(opened).value();
    } else {
      inner_ = NewFsObjectStore(dir_, PosixFileSystem());
    }
    set_target(inner_.get());
  }
  ~ScratchFsObjectStore() override {
    inner_.reset();
    EXPECT_TRUE(PosixFileSystem()->DeleteTree(dir_).ok());
  }

 private:
  std::string dir_;
  std::unique_ptr<ObjectStore> inner_;
};

INSTANTIATE_TEST_SUITE_P(
    Local, ObjectStoreConformanceTest,
    ::testing::Values(ObjectStoreFactory{"Mem", [] { return NewMemObjectStore(); }},
                      ObjectStoreFactory{"Fs",
                                         [] {
                                           return std::unique_ptr<ObjectStore>(
                                               new ScratchFsObjectStore());
                                         }},
                      // Every object a file named through the journal.
                      ObjectStoreFactory{"FsJournaled",
                                         [] {
                                           static const FsJournalOptions o{1u << 20, 64u << 20, 0};
                                           return std::unique_ptr<ObjectStore>(
                                               new ScratchFsObjectStore(&o));
                                         }},
                      // Every object packed in the journal (the default).
                      ObjectStoreFactory{"FsPacked",
                                         [] {
                                           static const FsJournalOptions o{};
                                           return std::unique_ptr<ObjectStore>(
                                               new ScratchFsObjectStore(&o));
                                         }},
                      // Packed, with tiny journal files: files retire every few records, and
                      // compaction copies live records forward all the time.
                      ObjectStoreFactory{"FsPackedSmallFiles",
                                         [] {
                                           static const FsJournalOptions o{1u << 20, 512, 64u << 10};
                                           return std::unique_ptr<ObjectStore>(
                                               new ScratchFsObjectStore(&o));
                                         }},
                      // Every non-empty object the un-journaled way, in journaled mode, with
                      // tiny journal files (a checkpoint every few records).
                      ObjectStoreFactory{"FsJournaledLarge",
                                         [] {
                                           static const FsJournalOptions o{0, 256};
                                           return std::unique_ptr<ObjectStore>(
                                               new ScratchFsObjectStore(&o));
                                         }}),
    ObjectStoreFactoryName);

}  // namespace
}  // namespace wombatkv
