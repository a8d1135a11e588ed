// Runs the ObjectStore conformance suite against the in-memory and local-directory stores.
#include <unistd.h>

#include <atomic>

#include "object/object_store_conformance.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

// An FsObjectStore over a fresh directory that it deletes when destroyed.
class ScratchFsObjectStore final : public ObjectStore {
 public:
  ScratchFsObjectStore() {
    static std::atomic<int> seq{0};
    dir_ = ::testing::TempDir() + "wombatkv_conformance_" + std::to_string(::getpid()) + "_" +
           std::to_string(seq++);
    EXPECT_TRUE(PosixFileSystem()->DeleteTree(dir_).ok());
    inner_ = NewFsObjectStore(dir_, PosixFileSystem());
  }
  ~ScratchFsObjectStore() override {
    inner_.reset();
    EXPECT_TRUE(PosixFileSystem()->DeleteTree(dir_).ok());
  }
  std::string Describe() const override { return inner_->Describe(); }
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    return inner_->Put(key, parts, options);
  }
  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
    return inner_->Get(key, offset, length);
  }
  Result<ObjectInfo> Head(std::string_view key) override { return inner_->Head(key); }
  Status Delete(std::string_view key) override { return inner_->Delete(key); }
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override {
    return inner_->List(prefix, delimiter, token, max_keys);
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
