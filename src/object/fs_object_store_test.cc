// FsObjectStore behaviour beyond the conformance suite: the on-disk layout, several stores and
// processes sharing one root, leftovers from crashes, and the limits of a directory tree.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

using Strings = std::vector<std::string>;

class FsObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> seq{0};
    root_ = ::testing::TempDir() + "wombatkv_fs_store_" + std::to_string(::getpid()) + "_" +
            std::to_string(seq++);
    ASSERT_TRUE(fs_->DeleteTree(root_).ok());
    store_ = NewFsObjectStore(root_, fs_);
  }
  void TearDown() override {
    store_.reset();
    EXPECT_TRUE(fs_->DeleteTree(root_).ok());
  }

  std::string Put(ObjectStore& s, std::string_view key, std::string_view v, PutOptions o = {}) {
    auto r = s.Put(key, {AsBytes(v)}, o);
    EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
    return r.ok() ? *r : "";
  }
  std::string ReadRaw(const std::string& rel) {
    auto r = fs_->ReadFile(root_ + "/" + rel, 0, kToEnd);
    EXPECT_TRUE(r.ok()) << rel << ": " << r.status().ToString();
    return r.ok() ? std::string(AsChars((*r)->view())) : "";
  }
  void WriteRaw(const std::string& rel, std::string_view v) {
    std::string path = root_ + "/" + rel;
    ASSERT_TRUE(fs_->CreateDirs(path.substr(0, path.find_last_of('/'))).ok());
    ASSERT_TRUE(fs_->WriteFileAtomic(path, {AsBytes(v)}, false).ok());
  }
  // Every file under the root, as relative paths.
  Strings Tree(const std::string& rel = "") {
    Strings out;
    auto names = fs_->ListDir(rel.empty() ? root_ : root_ + "/" + rel);
    if (!names.ok()) return out;
    for (const std::string& n : *names) {
      std::string child = rel.empty() ? n : rel + "/" + n;
      auto info = fs_->Stat(root_ + "/" + child);
      if (info.ok() && info->is_dir) {
        for (auto& c : Tree(child)) out.push_back(c);
      } else {
        out.push_back(child);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  Strings Keys(ObjectStore& s, std::string_view prefix = "", std::string_view delimiter = "") {
    auto page = s.List(prefix, delimiter, "", 1000);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    Strings out;
    if (!page.ok()) return out;
    for (const auto& o : page->objects) out.push_back(o.key);
    for (const auto& c : page->common_prefixes) out.push_back(c);
    std::sort(out.begin(), out.end());
    return out;
  }

  FileSystem* fs_ = PosixFileSystem();
  std::string root_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(FsObjectStoreTest, ObjectsAreFilesAtTheirKeyPathAndNoTemporaryFilesRemain) {
  Put(*store_, "blob/ab/cd", "blob bytes", {PutMode::kIfAbsent, ""});
  std::string etag = Put(*store_, "chain/f/c1", "head v1");
  Put(*store_, "chain/f/c1", "head v2", {PutMode::kIfMatch, etag});
  Put(*store_, "top", "t");
  EXPECT_EQ(ReadRaw("blob/ab/cd"), "blob bytes");
  EXPECT_EQ(ReadRaw("chain/f/c1"), "head v2");
  EXPECT_EQ(ReadRaw("top"), "t");
  // Only the objects and the lock file: every temporary was renamed, linked or removed.
  EXPECT_EQ(Tree(), (Strings{".~lock", "blob/ab/cd", "chain/f/c1", "top"}));
  EXPECT_EQ(store_->Describe(), "file://" + root_);
}

TEST_F(FsObjectStoreTest, TwoStoresOnOneRootSeeEachOthersWritesAndConditions) {
  auto other = NewFsObjectStore(root_ + "/", fs_);  // the same root, spelled differently
  std::string etag = Put(*store_, "shared/k", "from one");
  auto got = other->Get("shared/k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(AsChars(got->bytes->view()), "from one");
  EXPECT_EQ(got->etag, etag);
  std::string next = Put(*other, "shared/k", "from two", {PutMode::kIfMatch, etag});
  EXPECT_TRUE(store_->Put("shared/k", {AsBytes("late")}, {PutMode::kIfMatch, etag})
                  .status()
                  .IsConflict());
  EXPECT_EQ(store_->Head("shared/k")->etag, next);
  EXPECT_TRUE(store_->Put("shared/k", {AsBytes("x")}, {PutMode::kIfAbsent, ""})
                  .status()
                  .IsConflict());
  ASSERT_TRUE(other->Delete("shared/k").ok());
  EXPECT_TRUE(store_->Head("shared/k").status().IsNotFound());
}

TEST_F(FsObjectStoreTest, ExactlyOneOfFourProcessesRacingIfMatchWins) {
  const std::string etag = Put(*store_, "race", "start");
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: wait for the start signal, race once, report by exit code (0 win, 1 conflict).
      char c;
      ::close(go[1]);
      if (::read(go[0], &c, 1) != 1) ::_exit(3);
      auto own = NewFsObjectStore(root_, PosixFileSystem());
      std::string v = "child " + std::to_string(i);
      auto r = own->Put("race", {AsBytes(v)}, {PutMode::kIfMatch, etag});
      ::_exit(r.ok() ? 0 : r.status().IsConflict() ? 1 : 2);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  const char start[4] = {'g', 'g', 'g', 'g'};  // one byte per child: they all go at once
  ASSERT_EQ(::write(go[1], start, sizeof start), 4);
  ::close(go[1]);
  int wins = 0, conflicts = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 0) ++wins;
    if (WEXITSTATUS(status) == 1) ++conflicts;
  }
  EXPECT_EQ(wins, 1);
  EXPECT_EQ(conflicts, 3);
}

TEST_F(FsObjectStoreTest, ALeftoverTemporaryFileIsNeverListedOrServed) {
  Put(*store_, "a/k", "real");
  // What a crash between write and rename leaves behind, next to objects and alone in a dir.
  WriteRaw("a/.k.tmp.4242.7~", "partial");
  WriteRaw(".top.tmp.4242.8~", "partial");
  WriteRaw("only-temp/.x.tmp.4242.9~", "partial");
  EXPECT_EQ(Keys(*store_), (Strings{"a/k"}));
  EXPECT_EQ(Keys(*store_, "", "/"), (Strings{"a/"}));
  EXPECT_EQ(Keys(*store_, "a/", "/"), (Strings{"a/k"}));
  EXPECT_EQ(store_->Get("a/.k.tmp.4242.7~").status().code(), Code::kInvalidArgument);
  // Deleting the object leaves the directory (it still holds the leftover) but lists nothing.
  ASSERT_TRUE(store_->Delete("a/k").ok());
  EXPECT_TRUE(Keys(*store_, "", "/").empty());
}

TEST_F(FsObjectStoreTest, TheLockFileIsNeitherListedNorAKey) {
  std::string etag = Put(*store_, "k", "v");
  Put(*store_, "k", "w", {PutMode::kIfMatch, etag});
  EXPECT_EQ(Tree(), (Strings{".~lock", "k"}));
  EXPECT_EQ(Keys(*store_), (Strings{"k"}));
  EXPECT_EQ(Keys(*store_, ".", "/"), Strings{});
  EXPECT_EQ(store_->Head(".~lock").status().code(), Code::kInvalidArgument);
}

TEST_F(FsObjectStoreTest, AnEmptyDirectoryIsNotACommonPrefix) {
  ASSERT_TRUE(fs_->CreateDirs(root_ + "/empty/deeper").ok());
  Put(*store_, "full/k", "v");
  EXPECT_EQ(Keys(*store_, "", "/"), (Strings{"full/"}));
  EXPECT_EQ(Keys(*store_), (Strings{"full/k"}));
}

TEST_F(FsObjectStoreTest, DeleteRemovesEmptyParentDirectoriesButNotTheRoot) {
  Put(*store_, "x/y/z", "1");
  Put(*store_, "x/w", "2");
  ASSERT_TRUE(store_->Delete("x/y/z").ok());
  EXPECT_TRUE(fs_->Stat(root_ + "/x/y").status().IsNotFound());
  EXPECT_TRUE(fs_->Stat(root_ + "/x")->is_dir);
  ASSERT_TRUE(store_->Delete("x/w").ok());
  EXPECT_TRUE(fs_->Stat(root_ + "/x").status().IsNotFound());
  EXPECT_TRUE(fs_->Stat(root_)->is_dir);
  Put(*store_, "x/y/z", "again");  // and the tree grows back
  EXPECT_EQ(ReadRaw("x/y/z"), "again");
}

TEST_F(FsObjectStoreTest, AStoreWhoseRootVanishedIsEmptyAndRecreatesItOnTheNextWrite) {
  ASSERT_TRUE(fs_->DeleteTree(root_).ok());
  EXPECT_TRUE(store_->Get("k").status().IsNotFound());
  EXPECT_TRUE(store_->Delete("k").ok());
  EXPECT_TRUE(Keys(*store_, "", "/").empty());
  EXPECT_TRUE(Keys(*store_, "a/").empty());
  Put(*store_, "a/k", "back");
  EXPECT_EQ(ReadRaw("a/k"), "back");
}

TEST_F(FsObjectStoreTest, AKeyCannotBeBothAnObjectAndADirectory) {
  Put(*store_, "a", "file");
  Put(*store_, "c/d", "below");
  for (PutMode mode : {PutMode::kOverwrite, PutMode::kIfAbsent}) {
    EXPECT_EQ(store_->Put("a/b", {AsBytes("x")}, {mode, ""}).status().code(),
              Code::kFailedPrecondition);
    EXPECT_EQ(store_->Put("c", {AsBytes("x")}, {mode, ""}).status().code(),
              Code::kFailedPrecondition);
  }
  EXPECT_EQ(Keys(*store_), (Strings{"a", "c/d"}));
}

TEST_F(FsObjectStoreTest, ASegmentLongerThanTheFileSystemAllowsIsInvalidArgument) {
  auto r = store_->Put(std::string(300, 's'), {AsBytes("x")}, {});
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_TRUE(Keys(*store_).empty());
}

TEST_F(FsObjectStoreTest, InvalidKeysNeverReachTheFileSystem) {
  const std::string probe = "wombatkv_escape_probe_" + std::to_string(::getpid());
  EXPECT_EQ(store_->Put("../" + probe, {AsBytes("x")}, {}).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(fs_->Stat(root_ + "/../" + probe).status().IsNotFound());
  EXPECT_TRUE(Tree().empty());
}

TEST_F(FsObjectStoreTest, EveryOverwriteGetsANewEtagEvenWithinOneClockTick) {
  // Same size every time, back to back: the ETag must still change (mtime is bumped past the
  // replaced file's), and every earlier ETag must be refused by if-match.
  std::set<std::string> seen;
  std::string first = Put(*store_, "k", "v000");
  seen.insert(first);
  std::string current = first;
  for (int i = 1; i < 200; ++i) {
    char v[16];  // room for any int: GCC's -Wformat-truncation checks the type, not the loop
    std::snprintf(v, sizeof v, "v%03d", i);
    current = Put(*store_, "k", v, {PutMode::kIfMatch, current});
    EXPECT_TRUE(seen.insert(current).second) << "etag repeated: " << current;
  }
  for (const std::string& old : seen) {
    if (old == current) continue;
    ASSERT_TRUE(store_->Put("k", {AsBytes("zzzz")}, {PutMode::kIfMatch, old}).status().IsConflict());
  }
}

}  // namespace
}  // namespace wombatkv
