// Quoted: an untrusted name (a namespace, an object key, a peer's string) shown safely in a
// message or a log line — printable ASCII kept, anything else (a newline that would forge a log
// line, a quote, a byte of binary) as \xNN — in double quotes, cut at 80 characters ("...").
#pragma once

#include <string>
#include <string_view>

namespace wombatkv {

std::string Quoted(std::string_view s);

}  // namespace wombatkv
