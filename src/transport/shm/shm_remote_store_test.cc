// The store's parameterised suites (store_guarantees_test.cc) through the shared-memory transport:
// each test's Store is a RemoteStore over ConnectShm to a ShmServer whose Service runs the real
// Store the harness opened — every call crosses the control socket, the rings and the data areas.
// The store copies every put payload into the server's payload arenas, so every payload a get
// returns is passed by reference (docs/shm.md, "Zero-copy gets").
#include "client/remote_store.h"
#include "store/store_test_util.h"
#include "transport/shm/shm_channel.h"
#include "transport/shm/shm_server.h"
#include "transport/shm/shm_test_util.h"

namespace wombatkv::testing {
namespace {

// A Channel that owns the daemon side it talks to, so the Store the suite gets owns everything.
class OwningShmChannel : public Channel {
 public:
  OwningShmChannel(Store& store, std::shared_ptr<shm::PayloadArenas> arenas) {
    service_ = std::make_unique<Service>(store, *RealClock(), ServiceOptions{});
    ShmServerOptions so;
    so.run_dir = dir_.path();
    so.prefix = "suite";
    so.workers = 4;
    so.layout.request_area_bytes = so.layout.response_area_bytes = 64 << 20;
    so.arenas = std::move(arenas);
    server_ = std::make_unique<ShmServer>(*service_, so);
    Status s = server_->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    ShmClientOptions co;
    co.run_dir = dir_.path();
    co.prefix = "suite";
    auto c = ConnectShm(co);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) inner_ = std::move(*c);
  }
  Result<wire::Message> Call(wire::Message request) override {
    if (!inner_) return Status::Unavailable("not attached");
    return inner_->Call(std::move(request));
  }
  std::string Describe() const override { return "shm (test)"; }

 private:
  shm_test::TempRunDir dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<ShmServer> server_;
  std::unique_ptr<Channel> inner_;  // destroyed first: detaches before the server stops
};

StoreVariant OverShm(Planes planes, std::string name) {
  shm::PayloadArenasOptions ao;
  ao.arena_bytes = 64 << 20;
  ao.arenas_max = shm::PayloadArenas::kArenasMax;
  ao.min_payload_bytes = 1;  // every payload, so every get is a zero-copy one
  auto arenas = shm::PayloadArenas::Create(ao);
  EXPECT_TRUE(arenas.ok()) << arenas.status().ToString();
  std::shared_ptr<shm::PayloadArenas> a = arenas.ok() ? *arenas : nullptr;
  StoreVariant v{planes, std::move(name), [a](Store& store) -> std::unique_ptr<Store> {
                   return std::make_unique<RemoteStore>(
                       std::make_unique<OwningShmChannel>(store, a));
                 }};
  v.payload_allocator = a;
  return v;
}

}  // namespace

std::vector<StoreVariant> StoreVariants() {
  return {OverShm(Planes::kMemory, "MemoryShm"), OverShm(Planes::kDisk, "DiskShm")};
}

}  // namespace wombatkv::testing
