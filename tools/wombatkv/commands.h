// The `wombatkv` command groups. Each Add*Commands registers its subcommands (with their options,
// help text and examples) on the root app and records, per subcommand, the function that runs it
// once parsing succeeded. main.cc runs the one the user picked.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/wombatkv/context.h"

namespace wombatkv::cli {

// Runs a parsed command; returns the process exit code.
using Runner = std::function<int(Context&)>;

struct CommandTable {
  std::vector<std::pair<CLI::App*, Runner>> entries;
  void Add(CLI::App* app, Runner run) { entries.emplace_back(app, std::move(run)); }
};

void AddBlockCommands(CLI::App& root, CommandTable& table);    // put, put-chain, lookup, get, cat
void AddChainCommands(CLI::App& root, CommandTable& table);    // publish, ls, inspect
void AddSidecarCommands(CLI::App& root, CommandTable& table);  // sidecar put|get
void AddAdminCommands(CLI::App& root, CommandTable& table);    // stat, refresh
void AddAuditCommands(CLI::App& root, CommandTable& table);    // audit, du, gc

// A --help footer: the examples, then a one-line reminder of the exit codes.
std::string HelpFooter(std::initializer_list<std::string_view> examples);

// A whole number written in decimal digits only: CLI11 reads "-1" into an unsigned option as
// 2^64 - 1, which would reach the store as a real value.
CLI::Validator WholeNumber();

// An error writing where --out points: a path that cannot exist is a bad argument (exit 2), not
// a miss (exit 1) that a script would take for a key not found.
inline Status OutputPathError(const Status& s) {
  return s.IsNotFound() ? Status::InvalidArgument(s.message()) : s;
}

// What to do after a compare-and-swap publish lost: the chain's state as the store returned it.
inline std::string CasConflictHint(const ChainState& current) {
  const std::string state =
      current.version == 0
          ? std::string("the chain does not exist yet (version 0)")
          : "current tip " + current.tip.ToHex() + " version " + std::to_string(current.version);
  return state + ": rebase and retry with --expect-version " + std::to_string(current.version);
}

// "<command>: " context for error lines, e.g. Fail(ctx, "get", status).
inline int Fail(Context& ctx, std::string_view what, const Status& s, std::string_view hint = {}) {
  return ctx.out.Error(what, s, hint);
}

}  // namespace wombatkv::cli
