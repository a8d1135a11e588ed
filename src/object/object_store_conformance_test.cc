// Runs the ObjectStore conformance suite against the in-memory and local-directory stores.
#include <unistd.h>

#include <atomic>

#include "object/object_store_conformance.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

// An FsObjectStore over a fresh directory that it deletes when destroyed.
class ScratchFsObjectStore final : public ObjectStoreWrapper {
 public:
  ScratchFsObjectStore() {
    static std::atomic<int> seq{0};
    dir_ = ::testing::TempDir() + "wombatkv_conformance_" + std::to_string(::getpid()) + "_" +
           std::to_string(seq++);
    EXPECT_TRUE(PosixFileSystem()->DeleteTree(dir_).ok());
    inner_ = NewFsObjectStore(dir_, PosixFileSystem());
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
                                         }}),
    ObjectStoreFactoryName);

}  // namespace
}  // namespace wombatkv
