// The crash model itself (crash_model_fs.h): what a crash keeps must follow from the syncs that
// returned, whatever order overlapping syncs return in.
#include "object/crash_model_fs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "object/pause_once.h"

namespace wombatkv {
namespace {

// Holds the first directory sync in the device until released: a slow fsync.
class SlowFirstSyncDir final : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  Status SyncDir(const std::string& dir) override {
    pause.Hold();
    return FileSystemWrapper::SyncDir(dir);
  }
  PauseOnce pause;
};

std::string Contents(FileSystem* fs, const std::string& path) {
  auto b = fs->ReadFile(path, 0, ~uint64_t{0}, nullptr);  // the whole file
  return b.ok() ? std::string(reinterpret_cast<const char*>((*b)->data()), (*b)->size()) : "";
}

void Rename(FileSystem* fs, const std::string& path, const std::string& bytes, bool sync) {
  const ByteView v(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  auto temp = fs->WriteTemp(path, {v}, sync, /*later_than_current=*/false);
  ASSERT_TRUE(temp.ok()) << temp.status().ToString();
  ASSERT_TRUE((*temp)->Commit(/*replace=*/true).ok());
}

TEST(CrashModelFs, AnOlderDirectorySyncReturningLastDoesNotUndoANewerOne) {
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::string root = ::testing::TempDir() + "wombatkv_crash_model_" +
                             std::to_string(::getpid()) + "_" + std::to_string(seed);
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root).ok());
    ASSERT_TRUE(PosixFileSystem()->CreateDirs(root).ok());
    SlowFirstSyncDir slow(PosixFileSystem());
    CrashModelFs fs(&slow, root);
    const std::string path = root + "/k";
    Rename(&fs, path, "old, never synced", /*sync=*/false);
    // A sync of the directory begins with that rename queued, and stalls in the device.
    std::thread older([&] { EXPECT_TRUE(fs.SyncDir(root).ok()); });
    slow.pause.AwaitHeld();
    // Meanwhile a synced file replaces it and a second sync of the directory returns.
    Rename(&fs, path, "new, synced", /*sync=*/true);
    ASSERT_TRUE(fs.SyncDir(root).ok());
    // The older sync returns last.
    slow.pause.Release();
    older.join();
    fs.Crash();
    auto rng = NewSeededRandom(seed);
    fs.ApplyCrash(*rng);
    fs.Revive();
    EXPECT_EQ(Contents(PosixFileSystem(), path), "new, synced");
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root).ok());
  }
}

// An append file's name (created, then renamed) survives every crash once its directory was
// synced, and before that only some: the file may be back under its old name, or gone.
TEST(CrashModelFs, AnAppendFilesNameIsDurableOnlyOnceItsDirectoryIsSynced) {
  int seen_old = 0, seen_gone = 0, seen_new = 0;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::string root = ::testing::TempDir() + "wombatkv_crash_model_append_" +
                             std::to_string(::getpid()) + "_" + std::to_string(seed);
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root).ok());
    ASSERT_TRUE(PosixFileSystem()->CreateDirs(root).ok());
    CrashModelFs fs(PosixFileSystem(), root);
    const bool created_durably = seed % 2 == 0;  // else neither name was ever synced
    auto file = fs.NewAppendFile(root + "/old");
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    ASSERT_TRUE((*file)->Append({AsBytes(std::string("synced"))}).ok());
    ASSERT_TRUE((*file)->Sync().ok());
    if (created_durably) {
      ASSERT_TRUE(fs.SyncDir(root).ok());
    }
    ASSERT_TRUE((*file)->Rename(root + "/new").ok());
    const bool renamed_durably = seed % 4 == 0;
    if (renamed_durably) {
      ASSERT_TRUE(fs.SyncDir(root).ok());
    }
    fs.Crash();
    auto rng = NewSeededRandom(seed);
    fs.ApplyCrash(*rng);
    fs.Revive();
    const bool at_new = PosixFileSystem()->Stat(root + "/new").ok();
    const bool at_old = PosixFileSystem()->Stat(root + "/old").ok();
    EXPECT_FALSE(at_new && at_old);
    if (renamed_durably) {
      ASSERT_TRUE(at_new) << "a rename whose directory sync returned was undone";
      EXPECT_EQ(Contents(PosixFileSystem(), root + "/new").substr(0, 6), "synced");
    }
    if (!created_durably) {
      EXPECT_FALSE(at_old) << "a name never synced came back";
    }
    if (at_old) {
      EXPECT_EQ(Contents(PosixFileSystem(), root + "/old").substr(0, 6), "synced");
    }
    seen_new += at_new;
    seen_old += at_old;
    seen_gone += !at_new && !at_old;
    file->reset();
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root).ok());
  }
  // Each outcome the model allows happened in some crash.
  EXPECT_GT(seen_new, 0);
  EXPECT_GT(seen_old, 0);
  EXPECT_GT(seen_gone, 0);
}

}  // namespace
}  // namespace wombatkv
