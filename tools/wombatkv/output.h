// Output: how every `wombatkv` command talks to its user. A command produces its result once,
// either as human text (aligned tables, plain lines) or, with --json, as one JSON document on
// stdout. Errors always go to stderr as one line:
//     wombatkv: <what>: <why>; <what to do>     (the program name is settable)
// or, with --json, as {"error":{"code":"NOT_FOUND","exit":1,"message":"...","hint":"..."}}.
// --quiet drops informational notes (never results or errors).
//
// Not thread-safe: one Output per process, used from the main thread.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/human_units.h"
#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv::cli {

class Output {
 public:
  Output() = default;
  void Configure(bool json, bool quiet) {
    json_ = json;
    quiet_ = quiet;
  }
  // The name errors start with ("wombatkv" unless a tool says otherwise).
  void SetProgram(std::string program) { program_ = std::move(program); }
  // Whether the commands go to a daemon (the default advice for some errors differs).
  void SetRemote(bool remote) { remote_ = remote; }
  bool json() const { return json_; }
  bool quiet() const { return quiet_; }

  // A line of human output on stdout (ignored in --json mode: commands print JSON instead).
  void Line(std::string_view text);
  // An informational note on stderr; dropped with --quiet or --json.
  void Note(std::string_view text);
  // A warning on stderr ("wombatkv: warning: ..."); dropped with --json only if quiet.
  void Warn(std::string_view text);
  // The command's JSON result on stdout (one document, one line).
  void Json(const nlohmann::json& doc);
  // An aligned table on stdout; the header row is dropped with --quiet.
  void Table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows);
  // Raw bytes on stdout. Returns Internal if stdout cannot be written.
  Status Raw(ByteView bytes);

  // Reports a failed `what` (e.g. "get", "open /data") and returns the exit code for it.
  // `hint` replaces the default advice for the status code; `extra` is merged into the JSON
  // error object (e.g. the current chain state of a lost publish).
  int Error(std::string_view what, const Status& status, std::string_view hint = {},
            const nlohmann::json& extra = nullptr);
  // A usage error (exit 2) that is not a Status: "wombatkv: <what>: <why>; <hint>".
  int Usage(std::string_view what, std::string_view why, std::string_view hint);

 private:
  std::string program_ = "wombatkv";
  bool json_ = false;
  bool quiet_ = false;
  bool remote_ = false;
};

// JSON text that never throws: invalid UTF-8 (e.g. from a file name) is replaced.
std::string DumpJson(const nlohmann::json& doc);

// Standard base64 (RFC 4648, with padding), for payloads inside --json output.
std::string Base64(ByteView in);

// "1 byte", "2 bytes": n and `noun`, with an "s" unless n is 1.
std::string Counted(uint64_t n, std::string_view noun);

using ::wombatkv::HumanBytes;  // "1.5 MiB", "512 B" (base/human_units.h)

// Runs a tool's main, turning an escaped exception (a bug: the library reports errors as Status)
// into one line on stderr naming `program`, and exit code kExitInternal.
int RunMain(const char* program, int (*main)(int, char**), int argc, char** argv);

// Whether the command line asks for JSON (--json anywhere): for errors before or without a parse.
bool ArgvHasJson(int argc, char** argv);

}  // namespace wombatkv::cli
