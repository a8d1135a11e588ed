// docs/stats.md (the page the C header points engines to) describes every StoreStats field.
#include <gtest/gtest.h>

#include <string>

#include "base/read_text_file.h"
#include "store/stats_fields.h"

namespace wombatkv {
namespace {

TEST(StatsDoc, NamesEveryField) {
  const std::optional<std::string> text = ReadTextFile(WOMBATKV_STATS_DOC);
  ASSERT_TRUE(text) << WOMBATKV_STATS_DOC;
  const std::string& doc = *text;
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
