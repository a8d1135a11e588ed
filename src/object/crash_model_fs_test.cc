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

}  // namespace
}  // namespace wombatkv
