// The POSIX FileSystem against a scratch directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "wombatkv/env.h"

namespace wombatkv {
namespace {

class PosixFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> seq{0};
    dir_ = ::testing::TempDir() + "wombatkv_posix_fs_" + std::to_string(::getpid()) + "_" +
           std::to_string(seq++);
    ASSERT_TRUE(fs_->DeleteTree(dir_).ok());
    ASSERT_TRUE(fs_->CreateDirs(dir_).ok());
  }
  void TearDown() override { EXPECT_TRUE(fs_->DeleteTree(dir_).ok()); }

  std::string P(const std::string& name) const { return dir_ + "/" + name; }
  std::string Read(const std::string& path, uint64_t offset = 0, uint64_t length = UINT64_MAX) {
    auto r = fs_->ReadFile(path, offset, length);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::string(AsChars((*r)->view())) : "";
  }
  std::vector<std::string> Names(const std::string& path) {
    auto r = fs_->ListDir(path);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> names = r.ok() ? *r : std::vector<std::string>{};
    std::sort(names.begin(), names.end());
    return names;
  }

  FileSystem* fs_ = PosixFileSystem();
  std::string dir_;
};

TEST_F(PosixFileSystemTest, WriteFileAtomicWritesAllPartsAndLeavesNoTemporaryFile) {
  FileInfo written;
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes("ab"), {}, AsBytes("cde")}, true, &written)
                  .ok());
  EXPECT_EQ(Read(P("f")), "abcde");
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"f"});
  auto st = fs_->Stat(P("f"));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->size, 5u);
  EXPECT_EQ(st->inode, written.inode);
  EXPECT_EQ(st->mtime_ns, written.mtime_ns);
  EXPECT_FALSE(st->is_dir);
}

TEST_F(PosixFileSystemTest, WritesMoreThanIovMaxPartsInOrder) {
  std::vector<std::string> pieces;
  std::string expected;
  for (int i = 0; i < 3000; ++i) {
    pieces.push_back(std::to_string(i) + ",");
    expected += pieces.back();
  }
  std::vector<ByteView> parts;
  for (const auto& p : pieces) parts.push_back(AsBytes(p));
  ASSERT_TRUE(fs_->WriteFileAtomic(P("many"), parts, false).ok());
  EXPECT_EQ(Read(P("many")), expected);
}

TEST_F(PosixFileSystemTest, ReplacementsWithinOneClockTickStillGetIncreasingMtimes) {
  FileInfo prev;
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes("v0")}, false, &prev).ok());
  for (int i = 1; i < 100; ++i) {
    FileInfo next;
    std::string v = "v" + std::to_string(i % 10);
    ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes(v)}, false, &next).ok());
    EXPECT_GT(next.mtime_ns, prev.mtime_ns);
    EXPECT_NE(next.inode, prev.inode);  // created while its predecessor still existed
    EXPECT_EQ(fs_->Stat(P("f"))->mtime_ns, next.mtime_ns);
    prev = next;
  }
}

TEST_F(PosixFileSystemTest, AReplacementIsNewerThanItsPredecessorEvenOneDatedInTheFuture) {
  // Stands in for a coarse clock that has not ticked since the predecessor was written.
  FileInfo old_info;
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes("old")}, false, &old_info).ok());
  const struct timespec future[2] = {{0, UTIME_OMIT}, {4102444800, 5}};  // 2100-01-01
  ASSERT_EQ(::utimensat(AT_FDCWD, P("f").c_str(), future, 0), 0);
  FileInfo next;
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes("new")}, false, &next).ok());
  EXPECT_EQ(next.mtime_ns, 4102444800ull * 1000000000ull + 6);
  EXPECT_EQ(fs_->Stat(P("f"))->mtime_ns, next.mtime_ns);
}

TEST_F(PosixFileSystemTest, CreateFileExclusiveConflictsIfThePathExistsAndLeavesItUnchanged) {
  FileInfo written;
  ASSERT_TRUE(fs_->CreateFileExclusive(P("f"), {AsBytes("first")}, true, &written).ok());
  EXPECT_EQ(fs_->Stat(P("f"))->inode, written.inode);
  Status s = fs_->CreateFileExclusive(P("f"), {AsBytes("second")}, true);
  EXPECT_TRUE(s.IsConflict()) << s.ToString();
  EXPECT_EQ(Read(P("f")), "first");
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"f"});
}

TEST_F(PosixFileSystemTest, ReadFileReturnsTheRangeClippedToTheFileAndItsInfo) {
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes("0123456789")}, false).ok());
  EXPECT_EQ(Read(P("f"), 2, 3), "234");
  EXPECT_EQ(Read(P("f"), 8), "89");
  EXPECT_EQ(Read(P("f"), 10), "");
  EXPECT_EQ(Read(P("f"), 50, 5), "");
  FileInfo info;
  auto r = fs_->ReadFile(P("f"), 0, 1, &info);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(info.size, 10u);
  EXPECT_EQ(info.inode, fs_->Stat(P("f"))->inode);
}

TEST_F(PosixFileSystemTest, ReadFileIntoFillsTheGivenBufferAndCutsOffWhatItHeldBefore) {
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes("0123456789")}, false).ok());
  std::vector<size_t> asked;
  std::shared_ptr<Buffer> given;
  FileSystem::ReadBuffers buffers = [&](size_t n) {
    asked.push_back(n);
    given = Buffer::CopyOf(AsBytes(std::string(n + 8, '#')));  // older bytes, and room to spare
    return given;
  };
  FileInfo info;
  auto r = fs_->ReadFileInto(P("f"), 6, 100, buffers, &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(asked, std::vector<size_t>{4});
  EXPECT_EQ(r->get(), given.get()) << "read into a buffer of its own";
  EXPECT_EQ(AsChars((*r)->view()), "6789") << "the older bytes past the read are cut off";
  EXPECT_EQ(info.size, 10u);
  EXPECT_TRUE(fs_->ReadFileInto(P("nope"), 0, 1, buffers).status().IsNotFound());
}

TEST_F(PosixFileSystemTest, ReadFileIntoRefusesABufferTooSmallForTheRead) {
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {AsBytes("0123456789")}, false).ok());
  std::shared_ptr<Buffer> small = Buffer::CopyOf(AsBytes("abc"));
  auto r = fs_->ReadFileInto(P("f"), 0, 10, [&](size_t) { return small; });
  EXPECT_EQ(r.status().code(), Code::kInternal) << r.status().ToString();
  EXPECT_NE(r.status().message().find("3 bytes, 10 needed"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(AsChars(small->view()), "abc") << "nothing was written past or into it";
  r = fs_->ReadFileInto(P("f"), 0, 10, [](size_t) { return std::shared_ptr<Buffer>(); });
  EXPECT_EQ(r.status().code(), Code::kInternal);
}

TEST_F(PosixFileSystemTest, MissingPathsAreNotFoundAndTheMessageNamesThePath) {
  auto r = fs_->ReadFile(P("nope"), 0, 1);
  EXPECT_TRUE(r.status().IsNotFound());
  EXPECT_NE(r.status().message().find(P("nope")), std::string::npos) << r.status().message();
  EXPECT_TRUE(fs_->Stat(P("nope")).status().IsNotFound());
  EXPECT_TRUE(fs_->DeleteFile(P("nope")).IsNotFound());
  EXPECT_TRUE(fs_->ListDir(P("nope")).status().IsNotFound());
  EXPECT_TRUE(fs_->WriteFileAtomic(P("nope/f"), {AsBytes("x")}, true).IsNotFound());
  EXPECT_TRUE(fs_->CreateFileExclusive(P("nope/f"), {AsBytes("x")}, true).IsNotFound());
  EXPECT_EQ(Names(dir_), std::vector<std::string>{});
}

TEST_F(PosixFileSystemTest, CreateDirsMakesParentsAndRefusesToPassThroughAFile) {
  ASSERT_TRUE(fs_->CreateDirs(P("a/b/c")).ok());
  ASSERT_TRUE(fs_->CreateDirs(P("a/b/c")).ok());  // idempotent
  EXPECT_TRUE(fs_->Stat(P("a/b/c"))->is_dir);
  ASSERT_TRUE(fs_->WriteFileAtomic(P("a/file"), {AsBytes("x")}, false).ok());
  EXPECT_EQ(fs_->CreateDirs(P("a/file/d")).code(), Code::kFailedPrecondition);
  EXPECT_EQ(fs_->CreateDirs(P("a/file")).code(), Code::kFailedPrecondition);
}

TEST_F(PosixFileSystemTest, DeleteFileRemovesFilesAndEmptyDirectoriesOnly) {
  ASSERT_TRUE(fs_->CreateDirs(P("full/empty")).ok());
  ASSERT_TRUE(fs_->WriteFileAtomic(P("full/f"), {AsBytes("x")}, false).ok());
  EXPECT_EQ(fs_->DeleteFile(P("full")).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(fs_->DeleteFile(P("full/empty")).ok());
  EXPECT_TRUE(fs_->DeleteFile(P("full/f")).ok());
  EXPECT_TRUE(fs_->DeleteFile(P("full")).ok());
  EXPECT_EQ(Names(dir_), std::vector<std::string>{});
}

TEST_F(PosixFileSystemTest, ListDirNamesEveryEntryButDotAndDotDot) {
  ASSERT_TRUE(fs_->CreateDirs(P("d")).ok());
  ASSERT_TRUE(fs_->WriteFileAtomic(P("f"), {}, false).ok());
  ASSERT_TRUE(fs_->WriteFileAtomic(P(".hidden"), {}, false).ok());
  EXPECT_EQ(Names(dir_), (std::vector<std::string>{".hidden", "d", "f"}));
}

TEST_F(PosixFileSystemTest, DeleteTreeRemovesEverythingAndIgnoresAMissingPath) {
  ASSERT_TRUE(fs_->CreateDirs(P("t/u/v")).ok());
  ASSERT_TRUE(fs_->WriteFileAtomic(P("t/u/f"), {AsBytes("x")}, false).ok());
  EXPECT_TRUE(fs_->DeleteTree(P("t")).ok());
  EXPECT_TRUE(fs_->Stat(P("t")).status().IsNotFound());
  EXPECT_TRUE(fs_->DeleteTree(P("t")).ok());
}

TEST_F(PosixFileSystemTest, ASecondLockFailsNamingTheOwnerUntilTheFirstIsReleased) {
  auto first = fs_->LockFile(P("LOCK"), "pid 1234 on host x");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = fs_->LockFile(P("LOCK"), "pid 5678 on host y");
  ASSERT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(second.status().message(), P("LOCK") + " is locked by pid 1234 on host x");
  first->reset();
  auto third = fs_->LockFile(P("LOCK"), "short");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(Read(P("LOCK")), "short");  // the previous, longer note is gone
}

TEST_F(PosixFileSystemTest, BlockingLocksExcludeEachOtherAcrossThreads) {
  constexpr int kThreads = 8;
  std::latch go(kThreads);
  std::atomic<int> inside{0}, max_inside{0};
  std::atomic<int> counter{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      go.arrive_and_wait();
      for (int i = 0; i < 50; ++i) {
        auto lock = fs_->LockFileBlocking(P("LOCK"));
        ASSERT_TRUE(lock.ok()) << lock.status().ToString();
        int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        ++counter;
        --inside;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(counter.load(), kThreads * 50);
}

TEST_F(PosixFileSystemTest, ABlockingLockAlsoExcludesANonBlockingOne) {
  auto held = fs_->LockFileBlocking(P("LOCK"));
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(fs_->LockFile(P("LOCK"), "me").status().code(), Code::kFailedPrecondition);
}

TEST_F(PosixFileSystemTest, AppendFileWritesInOrderOverItsPreallocatedZeros) {
  auto file = fs_->NewAppendFile(P("journal"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE((*file)->Append({AsBytes("ab"), AsBytes("c")}).ok());
  // Preallocation keeps what was written and zero-fills the rest; appends then overwrite the
  // zeros in place instead of extending the file.
  ASSERT_TRUE((*file)->Preallocate(64).ok());
  ASSERT_TRUE((*file)->Append({AsBytes("de")}).ok());
  ASSERT_TRUE((*file)->Sync().ok());
  auto bytes = fs_->ReadFile(P("journal"), 0, ~uint64_t{0});
  ASSERT_TRUE(bytes.ok());
  std::string want = "abcde";
  want.resize(64, '\0');
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*bytes)->data()), (*bytes)->size()), want);
  // A journal file is never opened twice for writing.
  EXPECT_EQ(fs_->NewAppendFile(P("journal")).status().code(), Code::kConflict);
  EXPECT_TRUE(fs_->SyncFileSystem(P("journal")).ok());
}

TEST_F(PosixFileSystemTest, ASyncHandleSyncsRepeatedlyAndNeedsAnExistingPath) {
  auto handle = fs_->OpenSyncHandle(dir_);
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  ASSERT_TRUE(fs_->WriteFileAtomic(P("a"), {AsBytes("x")}, /*sync=*/false).ok());
  EXPECT_TRUE((*handle)->Sync().ok());
  EXPECT_TRUE((*handle)->Sync().ok());
  EXPECT_TRUE(fs_->OpenSyncHandle(P("missing")).status().IsNotFound());
}

}  // namespace
}  // namespace wombatkv
