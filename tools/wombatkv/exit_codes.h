// Exit codes of the WombatKV command-line tools (`wombatkv`, `wombatkv-workload`) and the one
// table that maps a Status code to them. Scripts rely on these numbers: they are documented in
// every tool's --help and in docs/cli.md, and tests/tools/cli_test.sh pins them. Never renumber.
//
// Header-only so both tools share the table without a library of their own.
#pragma once

#include <string_view>

#include "wombatkv/status.h"

namespace wombatkv::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitMiss = 1,          // NotFound: a key, chain, hash or sidecar is not there
  kExitUsage = 2,         // usage error or InvalidArgument (bad hex, bad namespace, ...)
  kExitConflict = 3,      // Conflict: a compare-and-swap publish lost
  kExitCorruption = 4,    // Corruption: stored bytes failed their check (never served)
  kExitPrecondition = 5,  // FailedPrecondition / ResourceExhausted: e.g. data dir locked
  kExitUnavailable = 6,   // Unavailable: transient, retry
  kExitInternal = 7,      // Internal: a bug or an unexpected failure
  kExitPermissionDenied = 8,  // PermissionDenied: the daemon refused the auth token
};

inline int ExitCodeFor(Code code) {
  switch (code) {
    case Code::kOk: return kExitOk;
    case Code::kNotFound: return kExitMiss;
    case Code::kInvalidArgument: return kExitUsage;
    case Code::kConflict: return kExitConflict;
    case Code::kCorruption: return kExitCorruption;
    case Code::kFailedPrecondition: return kExitPrecondition;
    case Code::kResourceExhausted: return kExitPrecondition;
    case Code::kUnavailable: return kExitUnavailable;
    case Code::kInternal: return kExitInternal;
    case Code::kPermissionDenied: return kExitPermissionDenied;
  }
  return kExitInternal;
}

// What to do about a namespace ValidateNamespace refused.
inline constexpr std::string_view kNamespaceHint =
    "use 1-64 characters from [A-Za-z0-9._-], other than \".\" and \"..\"";

// What the user should do next, when the command has nothing more specific to say (`remote`: the
// command went to a daemon).
inline std::string_view DefaultHint(Code code, bool remote) {
  switch (code) {
    case Code::kOk: return "";
    case Code::kNotFound:
      return "check the key and --namespace/--fingerprint (`wombatkv ls` lists published chains)";
    case Code::kInvalidArgument:
      return "run the command with --help for what it accepts";
    case Code::kConflict: return "re-read the current version and retry with it";
    case Code::kCorruption:
      return "the bytes were not served; `wombatkv audit` lists what is damaged (`audit "
             "--repair` deletes it, so that the block can be put again)";
    case Code::kFailedPrecondition:
      return "fix the condition it names, then retry";
    case Code::kResourceExhausted:
      return "free space or raise the limit (and restart the store if the error says so), then "
             "retry";
    case Code::kUnavailable:
      return remote ? "retry (the client reconnects by itself); check that wombatkvd is running, "
                      "and its log for errors of its object store (L2)"
                    : "retry; check that the object store (L2) is reachable";
    case Code::kInternal: return "this is a bug: please report it with the command line";
    case Code::kPermissionDenied:
      return remote ? "set WMBT_KV_AUTH_TOKEN to a token the daemon grants for this namespace"
                    : "run as a user who may write the data directory, or use another one "
                      "(--data-dir)";
  }
  return "";
}

// Lower-case words for the human error line ("wombatkv: get: not found: ...").
inline std::string_view CodeWords(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kNotFound: return "not found";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kConflict: return "conflict";
    case Code::kCorruption: return "corruption detected";
    case Code::kFailedPrecondition: return "failed precondition";
    case Code::kResourceExhausted: return "resource exhausted";
    case Code::kUnavailable: return "unavailable";
    case Code::kInternal: return "internal error";
    case Code::kPermissionDenied: return "permission denied";
  }
  return "error";
}

inline constexpr std::string_view kExitCodesHelp =
    "Exit codes:\n"
    "  0  success\n"
    "  1  miss / not found (a key, chain, content hash or sidecar is absent)\n"
    "  2  usage error or invalid argument (bad hex, bad namespace, missing option, an input\n"
    "     over its size limit)\n"
    "  3  conflict (publish --expect-version lost; the current tip/version is printed)\n"
    "  4  corruption detected (stored bytes failed their hash; nothing wrong was served)\n"
    "  5  a precondition or a limit: data directory held by another process, disk full, a\n"
    "     store's budget reached\n"
    "  6  unavailable: transient failure, retry\n"
    "  7  internal error (a bug)\n"
    "  8  permission denied (the daemon refused the auth token or its namespace)\n";

}  // namespace wombatkv::cli
