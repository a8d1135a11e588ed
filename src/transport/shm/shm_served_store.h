// Test fixture: a store served over shared memory in this process — payload arenas, a real Store
// over a StoreHarness's memory planes, a Service and a ShmServer under a temporary run directory —
// and RemoteStore clients over ConnectShm (shm_zero_copy_test.cc, shm_hostile_client_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "client/remote_store.h"
#include "daemon/service.h"
#include "store/store_test_util.h"
#include "transport/shm/payload_arenas.h"
#include "transport/shm/shm_channel.h"
#include "transport/shm/shm_server.h"
#include "transport/shm/shm_test_util.h"

namespace wombatkv::testing {

class ServedShmStore : public ::testing::Test {
 protected:
  struct Serving {
    std::string prefix;
    uint64_t arena_bytes = 16 << 20;
    uint64_t warm_ahead_bytes = 2 << 20;
    uint64_t area_bytes = 4 << 20;  // each client's request and response areas
    size_t workers = 2;
    std::function<void(StoreOptions&)> store_options;  // optional
  };
  // Call from SetUp (it ASSERTs).
  void Serve(Serving s) {
    prefix_ = s.prefix;
    shm::PayloadArenasOptions ao;
    ao.arena_bytes = s.arena_bytes;
    ao.warm_ahead_bytes = s.warm_ahead_bytes;
    auto a = shm::PayloadArenas::Create(ao);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    arenas_ = *a;
    StoreOptions o = h_.Options();
    o.payload_allocator = arenas_.get();
    if (s.store_options) s.store_options(o);
    store_ = &h_.Open(o);
    service_ = std::make_unique<Service>(*store_, *RealClock(), ServiceOptions{});
    ShmServerOptions so;
    so.run_dir = dir_.path();
    so.prefix = s.prefix;
    so.workers = s.workers;
    so.layout.request_area_bytes = so.layout.response_area_bytes = s.area_bytes;
    so.arenas = arenas_;
    server_ = std::make_unique<ShmServer>(*service_, so);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_.reset();
    service_.reset();
  }
  std::unique_ptr<Store> Client() {
    ShmClientOptions co;
    co.run_dir = dir_.path();
    co.prefix = prefix_;
    auto c = ConnectShm(co);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::make_unique<RemoteStore>(std::move(*c)) : nullptr;
  }

  StoreHarness h_{Planes::kMemory};
  std::shared_ptr<shm::PayloadArenas> arenas_;
  Store* store_ = nullptr;
  shm_test::TempRunDir dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<ShmServer> server_;
  std::string prefix_;
};

}  // namespace wombatkv::testing
