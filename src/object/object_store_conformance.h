// The ObjectStore conformance suite: one set of tests that every implementation must pass, so
// that the engine can rely on the contract in object_store.h whatever the backend.
//
// The tests are value-parameterised over a factory that makes a fresh, empty store per test. To
// run them against a backend, link the test binary with `wombatkv_object_conformance` and add:
//
//   INSTANTIATE_TEST_SUITE_P(S3, ObjectStoreConformanceTest,
//                            ::testing::Values(ObjectStoreFactory{"S3", [] { return ...; }}),
//                            ObjectStoreFactoryName);
//
// Every store `make` returns must be empty and independent of the others (e.g. a fresh directory
// or bucket prefix); it is destroyed at the end of its test.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "wombatkv/object_store.h"

namespace wombatkv {

struct ObjectStoreFactory {
  std::string name;  // the instantiation's name: [A-Za-z0-9_]+
  std::function<std::unique_ptr<ObjectStore>()> make;
};

// Shows a factory by name in test output (instead of its bytes).
inline void PrintTo(const ObjectStoreFactory& factory, std::ostream* os) { *os << factory.name; }

// For INSTANTIATE_TEST_SUITE_P: names each instantiation after its factory.
std::string ObjectStoreFactoryName(const ::testing::TestParamInfo<ObjectStoreFactory>& info);

class ObjectStoreConformanceTest : public ::testing::TestWithParam<ObjectStoreFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Helpers that fail the test on an unexpected error.
  // Eight threads race `put` (an if-match on the current etag of "race"), five times: exactly
  // one wins each time and the others conflict.
  using RacingPut = std::function<Result<std::string>(std::string_view content,
                                                      const PutOptions& options)>;
  void ExpectOneOfEightIfMatchWritersWins(const RacingPut& put);
  std::string MustPut(std::string_view key, std::string_view content,
                      PutOptions options = PutOptions());
  std::string MustGet(std::string_view key, uint64_t offset = 0, uint64_t length = kToEnd);
  // Every page of a listing, following next_token; fails if a page is empty but not the last.
  std::vector<ListPage> ListAllPages(std::string_view prefix, std::string_view delimiter,
                                     size_t max_keys);
  // The keys (and common prefixes) of a complete listing, in the order returned.
  std::vector<std::string> ListKeys(std::string_view prefix, std::string_view delimiter = "",
                                    size_t max_keys = 1000);

  std::unique_ptr<ObjectStore> store_;
};

}  // namespace wombatkv
