// wombatkv: the command-line client of the embedded WombatKV store. A thin main: it parses the
// command line (CLI11), resolves defaults from the environment (Config), and runs one command
// from the command groups (cmd_*.cc). No exception leaves main; every outcome is an exit code
// from tools/wombatkv/exit_codes.h.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "base/nearest_words.h"
#include "store/data_dir_owner.h"
#include "tools/wombatkv/commands.h"
#include "tools/wombatkv/exit_codes.h"
#include "tools/wombatkv/setting_flags.h"

#ifndef WOMBATKV_VERSION
#define WOMBATKV_VERSION "unknown"
#endif

namespace wombatkv::cli {

std::string HelpFooter(std::initializer_list<std::string_view> examples) {
  std::string out = "Examples:\n";
  for (std::string_view e : examples) {
    out += "  ";
    out += e;
    out += '\n';
  }
  out +=
      "\nExit codes: 0 ok, 1 miss/not found, 2 usage/invalid argument, 3 conflict, "
      "4 corruption,\n5 data dir locked/failed precondition, 6 unavailable (retry), 7 internal, "
      "8 permission denied\n(see `wombatkv --help`).\n"
      "\nGlobal options (-n, -f, --data-dir, --json, -q, -v, the store settings: `wombatkv "
      "--help`)\nmay also follow the command.\n";
  return out;
}

CLI::Validator WholeNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
          return "expected a whole number (decimal digits), got \"" + text + "\"";
        }
        uint64_t value = 0;
        if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc()) {
          return "\"" + text + "\" is too large (at most " + std::to_string(UINT64_MAX) + ")";
        }
        return "";
      },
      "");  // the options' type names say N; a description would print as "N:N"
}

namespace {

// "put", "sidecar get": the deepest subcommand the parser reached.
std::string ParsedCommandPath(const CLI::App& app) {
  std::string path;
  const CLI::App* at = &app;
  for (;;) {
    auto subs = at->get_subcommands();
    if (subs.empty()) break;
    at = subs.front();
    if (!path.empty()) path += ' ';
    path += at->get_name();
  }
  return path;
}

// Where the first word that is neither an option nor the value of a global option is (-1: none):
// what the user meant as the command, for "unknown command" errors and `help`.
int FirstCommandIndex(int argc, char** argv, const CLI::App& app) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.empty() || arg[0] == '-') {
      // A global option that takes a value (given as "--opt VALUE", not "--opt=VALUE").
      const CLI::Option* opt = app.get_option_no_throw(std::string(arg));
      if (opt != nullptr && opt->get_expected_min() > 0) ++i;  // skip its value
      continue;
    }
    return i;
  }
  return -1;
}

std::string FirstCommandWord(int argc, char** argv, const CLI::App& app) {
  const int i = FirstCommandIndex(argc, argv, app);
  return i < 0 ? "" : argv[i];
}

int Main(int argc, char** argv) {
  Context ctx;
  ctx.opts.flag_settings = SettingsGivenAsFlags(argc, argv);
  // Reported once the command line is parsed: --help and --version work whatever the variables.
  const Status environment = LoadEnvironmentDefaults(&ctx.opts, ctx.opts.flag_settings);

  CLI::App app{
      "wombatkv: inspect and drive a WombatKV block store in a local data directory, or one\n"
      "served by wombatkvd (--remote-prefix / --tcp-addr; audit, du and gc need the directory).\n"
      "Blocks are put (invisible), then published as chains (visible to lookups), and read back\n"
      "all or nothing. Defaults come from WMBT_KV_* environment variables.",
      "wombatkv"};
  app.require_subcommand(1);
  app.fallthrough();  // subcommands inherit: global options may follow the command
  app.set_version_flag("--version", "wombatkv " WOMBATKV_VERSION);
  app.add_option("--data-dir", ctx.opts.data_dir,
                 "Data directory: LOCK, l1/ (metadata), l2/ (blocks when no S3) "
                 "[env WMBT_KV_DATA_DIR]")
      ->type_name("DIR")
      ->capture_default_str();
  CLI::Option* ns_opt =
      app.add_option("-n,--namespace", ctx.opts.ns,
                     "Namespace, [A-Za-z0-9._-]{1,64} [env WMBT_KV_NAMESPACE]")
          ->type_name("NS")
          ->capture_default_str();
  app.add_option("-f,--fingerprint", ctx.opts.fingerprint_hex,
                 "Model fingerprint, 24 hex digits [env WMBT_KV_FINGERPRINT]")
      ->type_name("HEX")
      ->capture_default_str();
  app.add_option("--remote-prefix", ctx.opts.remote_prefix,
                 "Talk to the wombatkvd serving this shared-memory prefix (its --prefix) instead "
                 "of a data directory [env WMBT_KV_REMOTE_PREFIX]")
      ->type_name("NAME");
  app.add_option("--tcp-addr", ctx.opts.tcp_addr,
                 "Talk to the wombatkvd listening at HOST:PORT (with WMBT_KV_AUTH_TOKEN when not "
                 "loopback); --remote-prefix wins when both are set [env WMBT_KV_TCP_ADDR]")
      ->type_name("HOST:PORT");
  app.add_option("--lock-wait", ctx.opts.lock_wait,
                 "How long to wait for another wombatkv command that holds the data directory "
                 "(e.g. 500ms, 30s; 0s: fail at once); a daemon or engine holding it fails at once")
      ->type_name("DURATION")
      ->capture_default_str();
  app.add_flag("--json", ctx.opts.json,
               "Print the result as one JSON document; errors as {\"error\":{...}} on stderr");
  app.add_flag("-q,--quiet", ctx.opts.quiet,
               "Print only results and errors (no notes, no headers)");
  app.add_flag("-v,--verbose", ctx.opts.verbose,
               "Also print the store's informational and debug log");
  // Settings with an option above; the log level is -v's (warnings, or everything); no HTTP
  // transport exists, so WMBT_KV_HTTP_ADDR is no flag (set, it fails the command: Context).
  const SettingFlags settings(
      app,
      {"WMBT_KV_DATA_DIR", "WMBT_KV_NAMESPACE", "WMBT_KV_FINGERPRINT", "WMBT_KV_REMOTE_PREFIX",
       "WMBT_KV_TCP_ADDR", "WMBT_KV_LOG_LEVEL", "WMBT_KV_HTTP_ADDR"},
      "Store settings (L2 backend, S3, caches, capacity, transports)");
  app.footer(
      std::string(kExitCodesHelp) +
      "\nErrors are one line on stderr: \"wombatkv: <what>: <why>; <what to do>\".\n"
      "\nS3 credentials are variables only (a command line is visible to every local user):\n"
      "  WMBT_KV_S3_ACCESS_KEY and WMBT_KV_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID, "
      "AWS_SECRET_ACCESS_KEY).\n"
      "Through a daemon (--tcp-addr, --remote-prefix) the store settings are the daemon's: their\n"
      "flags are refused.\n"
      "\nExamples:\n"
      "  K1=$(printf '1%.0s' $(seq 64)); K2=$(printf '2%.0s' $(seq 64))\n"
      "  wombatkv put $K1 --value 'root block'\n"
      "  wombatkv put $K2 --parent $K1 --file block.bin\n"
      "  wombatkv publish $K2 $K2          # chain id = tip, prints the version\n"
      "  wombatkv lookup $K1 $K2           # prints 2\n"
      "  wombatkv get $K1 $K2 --out ./restored\n"
      "  wombatkv ls; wombatkv inspect $K2; wombatkv --json stat\n"
      "Run `wombatkv <command> --help` for each command. Reference: docs/cli.md\n");

  CommandTable table;
  AddBlockCommands(app, table);
  AddChainCommands(app, table);
  AddSidecarCommands(app, table);
  AddAdminCommands(app, table);
  AddAuditCommands(app, table);

  auto unknown_command = [&](const std::string& word) {
    ctx.out.Configure(ArgvHasJson(argc, argv), false);
    std::vector<std::string_view> commands;
    for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
    const auto near = NearestWord(word, commands, 2);
    return ctx.out.Usage("usage", "unknown command \"" + word + "\"",
                         near ? "did you mean `wombatkv " + std::string(*near) + "`?"
                              : "run `wombatkv --help` for the commands");
  };
  // `wombatkv help [COMMAND...]` is `wombatkv [COMMAND...] --help`.
  std::vector<char*> args(argv, argv + argc);
  char help_flag[] = "--help";
  if (const int i = FirstCommandIndex(argc, argv, app);
      i >= 0 && std::string_view(argv[i]) == "help") {
    if (i + 1 < argc && argv[i + 1][0] != '-') {
      const auto subs = app.get_subcommands({});
      if (std::none_of(subs.begin(), subs.end(),
                       [&](const CLI::App* sub) { return sub->get_name() == argv[i + 1]; })) {
        return unknown_command(argv[i + 1]);
      }
    }
    args.erase(args.begin() + i);
    args.push_back(help_flag);
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    ctx.out.Configure(ArgvHasJson(argc, argv), false);
    std::string command = ParsedCommandPath(app);
    if (command.empty()) {
      std::string word = FirstCommandWord(argc, argv, app);
      if (!word.empty()) return unknown_command(word);
    }
    std::string what = command.empty() ? std::string("usage") : command;
    std::string hint = "run `wombatkv " + (command.empty() ? "" : command + " ") + "--help`";
    return ctx.out.Usage(what, e.what(), hint);
  }

  if (!environment.ok()) {
    ctx.out.Configure(ArgvHasJson(argc, argv), false);
    return ctx.out.Error("environment", environment,
                         "fix or unset that variable, or give its flag (docs/configuration.md)");
  }
  std::string failed_flag;
  if (Status s = settings.ApplyTo(&ctx.opts.config, &failed_flag); !s.ok()) {
    ctx.out.Configure(ctx.opts.json, false);
    return ctx.out.Usage(failed_flag, s.message(), "run `wombatkv --help`");
  }
  ctx.ns_given = ns_opt->count() > 0;
  if (int code = ctx.Validate(); code != kExitOk) return code;
  for (auto& [sub, run] : table.entries) {
    if (sub->parsed()) return run(ctx);
  }
  return ctx.out.Usage("usage", "no command given", "run `wombatkv --help`");
}

}  // namespace
}  // namespace wombatkv::cli

int main(int argc, char** argv) {
  // A copy or link under another name still notes its data directory as held by wombatkv.
  wombatkv::SetOwnerProgram("wombatkv");
  return wombatkv::cli::RunMain("wombatkv", wombatkv::cli::Main, argc, argv);
}
