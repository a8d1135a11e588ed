// The store_test binary runs the parameterised suites on the embedded Store only.
#include "store/store_test_util.h"

namespace wombatkv::testing {

std::vector<StoreVariant> StoreVariants() {
  return {{Planes::kMemory, "Memory", nullptr}, {Planes::kDisk, "Disk", nullptr}};
}

}  // namespace wombatkv::testing
