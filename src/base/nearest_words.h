// "Did you mean ...?": the known word nearest to a mistyped one, by Levenshtein distance (one
// edit = a character inserted, deleted or replaced).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace wombatkv {

// The edit distance of a and b, or max + 1 once every alignment is over `max` (it stops early).
size_t EditDistance(std::string_view a, std::string_view b, size_t max);

// The word of `known` nearest to `word` within max_edits edits (the first of equally near ones);
// none when no word is that near.
std::optional<std::string_view> NearestWord(std::string_view word,
                                            std::span<const std::string_view> known,
                                            size_t max_edits);

}  // namespace wombatkv
