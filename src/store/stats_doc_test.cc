// docs/stats.md (the page the C header points engines to) describes every StoreStats field.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "store/stats_fields.h"

namespace wombatkv {
namespace {

TEST(StatsDoc, NamesEveryField) {
  std::ifstream in(WOMBATKV_STATS_DOC);
  ASSERT_TRUE(in) << WOMBATKV_STATS_DOC;
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  size_t rows = 0;
  for (const StoreStatsField& f : kStoreStatsFields) {
    const bool listed = doc.find("| `" + std::string(f.name) + "` |") != std::string::npos;
    EXPECT_TRUE(listed) << "docs/stats.md does not describe " << f.name;
    rows += listed;
  }
  EXPECT_GT(rows, 60u);
}

}  // namespace
}  // namespace wombatkv
