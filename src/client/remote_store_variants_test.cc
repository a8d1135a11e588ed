// remote_store_test runs the store's parameterised suites (store_guarantees_test.cc) through the
// daemon's code path: each test's Store is a RemoteStore whose LoopbackChannel hands every call to
// a Service over the real Store the harness opened (on memory planes, then on disk planes).
// "DiskRemoteFramed" also moves every request and response through the TCP body framing.
#include "client/loopback_channel.h"
#include "client/remote_store.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

StoreWrapper Remote(bool frame) {
  return [frame](Store& store) -> std::unique_ptr<Store> {
    auto service = std::make_unique<Service>(store, *RealClock(), ServiceOptions{});
    LoopbackOptions o;
    o.frame = frame;
    return std::make_unique<RemoteStore>(
        std::make_unique<LoopbackChannel>(std::move(service), std::move(o)));
  };
}

}  // namespace

std::vector<StoreVariant> StoreVariants() {
  return {{Planes::kMemory, "MemoryRemote", Remote(false)},
          {Planes::kDisk, "DiskRemoteFramed", Remote(true)}};
}

}  // namespace wombatkv::testing
