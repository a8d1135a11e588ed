#include "base/nearest_words.h"

#include <algorithm>
#include <vector>

namespace wombatkv {

size_t EditDistance(std::string_view a, std::string_view b, size_t max) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > max) return max + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({up + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
      best = std::min(best, row[j]);
    }
    if (best > max) return max + 1;
  }
  return row[b.size()];
}

std::optional<std::string_view> NearestWord(std::string_view word,
                                            std::span<const std::string_view> known,
                                            size_t max_edits) {
  std::optional<std::string_view> nearest;
  size_t best = max_edits + 1;
  for (std::string_view k : known) {
    const size_t d = EditDistance(word, k, max_edits);
    if (d < best) {
      best = d;
      nearest = k;
    }
  }
  return nearest;
}

}  // namespace wombatkv
