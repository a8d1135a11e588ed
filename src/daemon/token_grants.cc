// ParseTokenGrants (service.h). Errors name the entry by position, never by its token.
#include <string>
#include <string_view>

#include "base/limits.h"
#include "daemon/service.h"
#include "wombatkv/types.h"

namespace wombatkv {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsTokenChar(char c) { return static_cast<unsigned char>(c) > 0x20 && c != 0x7f && c != ','; }

}  // namespace

Result<std::vector<TokenGrant>> ParseTokenGrants(std::string_view text) {
  std::vector<TokenGrant> grants;
  size_t entry = 0;
  while (!text.empty()) {
    const size_t semi = text.find(';');
    std::string_view item = Trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view{} : text.substr(semi + 1);
    ++entry;
    if (item.empty()) continue;  // "a;;b" and a trailing ';' are harmless
    const std::string where = "auth token entry " + std::to_string(entry);
    const size_t eq = item.find('=');
    std::string_view token = Trim(item.substr(0, eq));
    if (token.empty()) return Status::InvalidArgument(where + " has an empty token");
    if (token.size() > limits::kAuthTokenBytesMax) {
      return Status::InvalidArgument(where + " has a token of " + std::to_string(token.size()) +
                                     " bytes; tokens are at most " +
                                     std::to_string(limits::kAuthTokenBytesMax) + " bytes");
    }
    for (char c : token) {
      if (!IsTokenChar(c)) {
        return Status::InvalidArgument(
            where +
            ": the token contains a space, comma or control character; use printable "
            "ASCII without spaces");
      }
    }
    TokenGrant g{std::string(token), {}};
    if (eq != std::string_view::npos) {
      std::string_view list = item.substr(eq + 1);
      if (Trim(list).empty()) {
        return Status::InvalidArgument(where +
                                       " has '=' but no namespace after it (write "
                                       "TOKEN for every namespace, TOKEN=NS1,NS2 for some)");
      }
      while (true) {
        const size_t comma = list.find(',');
        std::string_view ns = Trim(list.substr(0, comma));
        Status valid = ValidateNamespace(ns);
        if (!valid.ok()) return valid.WithContext(where);
        g.namespaces.emplace_back(ns);
        if (comma == std::string_view::npos) break;
        list = list.substr(comma + 1);
      }
    }
    for (size_t i = 0; i < grants.size(); ++i) {
      if (grants[i].token == g.token) {
        return Status::InvalidArgument(where +
                                       " repeats the token of an earlier entry; give each "
                                       "token once with all its namespaces");
      }
    }
    grants.push_back(std::move(g));
  }
  return grants;
}

}  // namespace wombatkv
