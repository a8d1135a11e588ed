// Test helpers for the store: deterministic keys and payloads, temp directories, and a store
// "harness" that can be closed and reopened (a restart) on the same planes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "base/blake3_hash.h"
#include "env/manual_executor.h"
#include "gc/gc_test_util.h"
#include "meta/meta_store.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"
#include "wombatkv/store.h"

namespace wombatkv::testing {

inline BlockKey Key(uint64_t i, uint64_t salt = 0) {
  uint64_t in[2] = {i, salt};
  auto d = Blake3({reinterpret_cast<const uint8_t*>(in), sizeof in});
  return BlockKey::FromBytes(d);
}

inline std::vector<uint8_t> Payload(uint64_t i, size_t size) {
  std::vector<uint8_t> p(size);
  uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;
  for (auto& b : p) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  return p;
}

inline Fingerprint Fp(uint8_t v) {
  Fingerprint f;
  f.bytes.fill(v);
  return f;
}

// Wall time that moves only when the test says so (2025-01-01 at the start).
class FakeClock final : public ManualClock {
 public:
  FakeClock() : ManualClock(1735689600ull * 1000000) {}
};

// An in-memory L1 for tests to derive from: override Write to watch or refuse what is written.
class MemMetaStoreWrapper : public MetaStore {
 public:
  Status Write(const MetaWriteBatch& batch, bool sync) override {
    return inner_->Write(batch, sync);
  }
  Result<std::string> Get(std::string_view key) override { return inner_->Get(key); }
  Status Scan(std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override {
    return inner_->Scan(prefix, fn);
  }
  Status DeletePrefix(std::string_view prefix) override { return inner_->DeletePrefix(prefix); }

 private:
  std::unique_ptr<MetaStore> inner_ = NewMemMetaStore();
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wombatkv-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Holds a chain of blocks for a test: keys, parents (root's is zero) and payloads.
struct TestChain {
  std::vector<BlockKey> keys;
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<BlockPut> Puts(size_t from = 0, size_t to = SIZE_MAX) const {
    std::vector<BlockPut> out;
    for (size_t i = from; i < std::min(to, keys.size()); ++i) {
      out.push_back(BlockPut{keys[i], i ? keys[i - 1] : BlockKey{}, payloads[i]});
    }
    return out;
  }
  const BlockKey& tip() const { return keys.back(); }
};

inline TestChain MakeChain(size_t n, size_t block_bytes, uint64_t salt = 0) {
  TestChain c;
  for (size_t i = 0; i < n; ++i) {
    c.keys.push_back(Key(i, salt));
    c.payloads.push_back(Payload(i + salt * 1000003, block_bytes));
  }
  return c;
}

// Where the planes live for a test: in memory (shared across reopen), or real disk (a temp data
// directory with RocksDB L1 and the local-directory L2).
enum class Planes { kMemory, kDisk };

// A Store put in front of the one a harness opens (e.g. a RemoteStore talking to it through a
// loopback daemon), so one suite runs against every way of reaching a store.
using StoreWrapper = std::function<std::unique_ptr<Store>(Store&)>;

// One way a parameterised suite reaches its store: the planes, and an optional wrapper.
struct StoreVariant {
  Planes planes = Planes::kMemory;
  std::string name;    // the test-name suffix: "Memory", "DiskRemote"
  StoreWrapper wrap;   // null: the embedded Store itself
  // StoreOptions::payload_allocator of the harness's stores (the shared-memory variants pass
  // the arenas their server hands out).
  std::shared_ptr<PayloadAllocator> payload_allocator;
  bool operator==(Planes p) const { return planes == p; }  // so `GetParam() == Planes::kDisk` reads
};
inline void PrintTo(const StoreVariant& v, std::ostream* os) { *os << v.name; }

// The variants of the test binary that links this: the embedded store in store_test
// (store_variants_embedded_test.cc), RemoteStore over a loopback Service in remote_store_test
// (src/client/remote_store_variants_test.cc). Suites instantiate with ValuesIn(StoreVariants()).
std::vector<StoreVariant> StoreVariants();
inline std::string VariantName(const ::testing::TestParamInfo<StoreVariant>& info) {
  return info.param.name;
}

class StoreHarness {
 public:
  explicit StoreHarness(Planes planes) : planes_(planes) {
    if (planes == Planes::kMemory) {
      l2_ = NewMemObjectStore();
      l1_ = NewMemMetaStore();
    }
  }
  explicit StoreHarness(const StoreVariant& v) : StoreHarness(v.planes) {
    wrap_ = v.wrap;
    allocator_ = v.payload_allocator;
  }
  StoreOptions Options() {
    StoreOptions o;
    if (planes_ == Planes::kMemory) {
      o.object_store = l2_.get();
      o.meta_store = l1_.get();
    } else {
      o.data_dir = dir_.path() + "/data";
    }
    o.cache_bytes_max = 64 << 20;
    o.upload_threads = 2;
    o.payload_allocator = allocator_.get();
    o.log = [this](LogLevel, const std::string& m) {
      std::lock_guard<std::mutex> g(log_mu_);
      log_.push_back(m);
    };
    return o;
  }
  // Returns the store the test talks to: the wrapper's when the variant has one.
  Store& Open(StoreOptions o) {
    front_.reset();
    store_.reset();
    auto s = Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    if (wrap_ && store_) {
      front_ = wrap_(*store_);
      return *front_;
    }
    return *store_;
  }
  Store& Open() { return Open(Options()); }
  Store& Reopen() {
    front_.reset();
    store_.reset();
    return Open();
  }
  void Close() {
    front_.reset();
    store_.reset();
  }
  Store& store() { return front_ ? *front_ : *store_; }
  const std::string& dir() const { return dir_.path(); }
  std::vector<std::string> log() const {
    std::lock_guard<std::mutex> g(log_mu_);
    return log_;
  }
  ObjectStore* mem_l2() { return l2_.get(); }
  MetaStore* mem_l1() { return l1_.get(); }

 private:
  Planes planes_;
  TempDir dir_;
  std::unique_ptr<ObjectStore> l2_;
  std::unique_ptr<MetaStore> l1_;
  std::unique_ptr<Store> store_;
  StoreWrapper wrap_;
  std::shared_ptr<PayloadAllocator> allocator_;
  std::unique_ptr<Store> front_;  // wraps *store_: destroyed first
  mutable std::mutex log_mu_;     // the store logs from its upload threads too
  std::vector<std::string> log_;
};

// Two hosts: stores with data directories of their own on one L2 directory (a shared bucket).
struct TwoHosts {
  TempDir shared;
  std::unique_ptr<ObjectStore> l2_a =
      NewFsObjectStore(shared.path() + "/bucket", PosixFileSystem());
  std::unique_ptr<ObjectStore> l2_b =
      NewFsObjectStore(shared.path() + "/bucket", PosixFileSystem());
  // Host 'a' or 'b'.
  StoreOptions Options(char host) {
    StoreOptions o;
    o.data_dir = shared.path() + "/host-" + host;
    o.object_store = host == 'a' ? l2_a.get() : l2_b.get();
    return o;
  }
};

inline std::string PlanesName(const ::testing::TestParamInfo<Planes>& info) {
  return info.param == Planes::kMemory ? "Memory" : "Disk";
}

}  // namespace wombatkv::testing
