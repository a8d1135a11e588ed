// ReadTextFile: a whole file as a string, or nullopt when it cannot be opened or read. For small
// files read once (the tests that check a document against the code).
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace wombatkv {

inline std::optional<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(text).str();
}

}  // namespace wombatkv
