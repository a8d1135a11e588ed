// wombatkvd: the WombatKV daemon. A thin main over Daemon (src/daemon/daemon.h): settings from
// WMBT_KV_* variables, overridden by flags (both parsed by Config / DaemonSettings), then
// start, wait for SIGTERM or SIGINT, stop gracefully. docs/daemon.md is the guide.
//
// Exit status: 0 after a graceful stop; 1 when start-up fails (store, bind, S3) or running
// requests outlived --shutdown-timeout (or a second SIGINT cut the stop short); 2 for a bad flag
// or environment variable.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/setting_text.h"
#include "config/config.h"
#include "config/unknown_settings.h"
#include "daemon/daemon.h"
#include "daemon/daemon_settings.h"
#include "setup/store_from_config.h"
#include "store/data_dir_owner.h"
#include "tools/wombatkv/output.h"
#include "tools/wombatkv/setting_flags.h"

#ifndef WOMBATKV_VERSION
#define WOMBATKV_VERSION "unknown"
#endif

namespace wombatkv {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

int Usage(const std::string& what, const Status& s) {
  std::fprintf(stderr, "wombatkvd: %s: %s; run `wombatkvd --help`\n", what.c_str(),
               s.message().c_str());
  return kExitUsage;
}

// A flag given on the command line, applied after the environment.
struct FlagSetting {
  const char* setting;  // WMBT_KV_* name
  bool daemon;          // a DaemonSettings setting (else a Config one)
  std::string value;
  CLI::Option* option = nullptr;
};

// What the daemon has in place of a client's setting (SettingDoc::client), and the wombatkv
// CLI's short flag for it: a flag of one given to wombatkvd gets a message saying so rather than
// CLI11's "arguments were not expected". Their variables are not read either, so a value only a
// client could parse never stops the daemon.
struct ClientSetting {
  std::string_view setting;
  const char* short_flag;  // the wombatkv CLI's short form, or ""
  const char* instead;     // what the daemon has in its place
};
constexpr ClientSetting kInstead[] = {
    {"WMBT_KV_NAMESPACE", "-n", "the daemon serves every namespace its clients ask for"},
    {"WMBT_KV_FINGERPRINT", "-f", "the daemon serves every fingerprint its clients ask for"},
    {"WMBT_KV_TCP_ADDR", "", "the daemon listens where --tcp says"},
    {"WMBT_KV_REMOTE_PREFIX", "", "the daemon serves shared memory under --prefix"},
    {"WMBT_KV_CLIENT_POLL", "", "it tells a client how to wait for answers"},
    {"WMBT_KV_REQUEST_TIMEOUT_MS", "", "it tells a client how long to wait for an answer"},
    {"WMBT_KV_HTTP_ADDR", "",
     "it names an HTTP transport for clients, which does not exist yet; the daemon serves "
     "/metrics over HTTP under --http"},
};

const std::vector<ClientSetting>& ClientSettings() {
  static const std::vector<ClientSetting> kAll = [] {
    std::vector<ClientSetting> out;
    for (const SettingDoc& d : AllSettings()) {
      if (!d.client) continue;
      const auto* it = std::find_if(std::begin(kInstead), std::end(kInstead),
                                    [&](const ClientSetting& c) { return c.setting == d.name; });
      out.push_back(it != std::end(kInstead) ? *it
                                             : ClientSetting{d.name, "", "only clients read it"});
    }
    return out;
  }();
  return kAll;
}

bool IsClientSetting(std::string_view name) {
  return std::any_of(ClientSettings().begin(), ClientSettings().end(),
                     [&](const ClientSetting& c) { return c.setting == name; });
}

// Config settings that get no store flag: those with a flag of their own below, and the
// client ones.
std::set<std::string_view> NoStoreFlag() {
  std::set<std::string_view> out = {"WMBT_KV_DATA_DIR", "WMBT_KV_CACHE_BYTES", "WMBT_KV_LOG_LEVEL",
                                    "WMBT_KV_RUN_DIR"};
  for (const ClientSetting& c : ClientSettings()) out.insert(c.setting);
  return out;
}

// The first argument that names a client setting's flag ("--namespace" or "--namespace=x"), or
// nullptr.
const ClientSetting* ClientSettingFlag(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    for (const ClientSetting& c : ClientSettings()) {
      const std::string flag = cli::SettingFlagName(c.setting);
      if (arg == flag || arg.starts_with(flag + "=") || (*c.short_flag && arg == c.short_flag)) {
        return &c;
      }
    }
  }
  return nullptr;
}

const char* kFooter =
    "Environment: every flag has a WMBT_KV_* variable (named in brackets); a flag overrides "
    "it.\nS3 credentials are variables only (a command line is visible to every local user):"
    "\n  WMBT_KV_S3_ACCESS_KEY and WMBT_KV_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID, "
    "AWS_SECRET_ACCESS_KEY).\n"
    "Clients: WMBT_KV_TCP_ADDR=HOST:PORT (and WMBT_KV_AUTH_TOKEN when the listener is not "
    "loopback),\n  or WMBT_KV_REMOTE_PREFIX=NAME (with the daemon's WMBT_KV_RUN_DIR, if not "
    "/tmp).\n"
    "\nSecurity: a --tcp address that is not loopback requires at least one auth token; the "
    "daemon\nrefuses to start otherwise. Prefer WMBT_KV_AUTH_TOKENS to --auth-token: "
    "command lines are\nvisible to every local user (ps).\n"
    "\nSignals: SIGTERM or SIGINT stops accepting, lets running requests finish (at most\n"
    "--shutdown-timeout), closes the store (waiting for its uploads) and exits 0. SIGINT during\n"
    "the stop exits at once (1); a repeated SIGTERM does not (wrappers such as timeout(1) send\n"
    "one to the process and one to its group). SIGHUP is ignored: nothing is reloaded.\n"
    "\nExit status: 0 graceful stop, 1 start-up failed or stop cut short, 2 bad flag or "
    "variable.\n"
    "\nExamples:\n"
    "  wombatkvd --data-dir /var/lib/wombatkv --tcp 127.0.0.1:7070 --http 127.0.0.1:9090\n"
    "  WMBT_KV_AUTH_TOKENS='s3cret=team-a;adm1n' wombatkvd --tcp 0.0.0.0:7070\n"
    "Reference: docs/daemon.md, docs/configuration.md\n";

// Waits for SIGTERM or SIGINT and returns it; a SIGHUP meanwhile is logged and ignored, and so
// is a SIGTERM while `stopping`.
int NextSignal(const sigset_t& signals, bool stopping) {
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig == SIGHUP || (sig == SIGTERM && stopping)) {
      std::fprintf(stderr, "wombatkvd: received %s while %s: ignored (%s)\n",
                   sig == SIGHUP ? "SIGHUP" : "SIGTERM", stopping ? "stopping" : "running",
                   sig == SIGHUP ? "wombatkvd reloads nothing; SIGTERM stops it"
                                 : "already stopping; SIGINT exits at once");
      std::fflush(stderr);
      continue;
    }
    return sig;
  }
}

int Main(int argc, char** argv) {
  // Signals are taken synchronously by this thread (sigwait): block them before any other
  // thread exists, so every thread the daemon starts inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);  // taken and ignored (below): its default would kill us
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a vanished client is an error on its socket, not our death

  CLI::App app{
      "wombatkvd: the WombatKV daemon. It owns one store (RAM index and cache, RocksDB L1, L2\n"
      "in a local directory or S3) and serves it to many engine processes over TCP (and shared\n"
      "memory), with /healthz, /readyz and Prometheus /metrics over HTTP.",
      "wombatkvd"};
  app.set_version_flag("--version", "wombatkvd " WOMBATKV_VERSION);
  std::vector<FlagSetting> flags = {
      {"WMBT_KV_DATA_DIR", false},         {"WMBT_KV_TCP", true},
      {"WMBT_KV_DAEMON_SHM_PREFIX", true}, {"WMBT_KV_DAEMON_HTTP", true},
      {"WMBT_KV_CACHE_BYTES", false},      {"WMBT_KV_LOG_LEVEL", false},
      {"WMBT_KV_MAX_FRAME_BYTES", true},   {"WMBT_KV_SHUTDOWN_TIMEOUT_MS", true},
      {"WMBT_KV_IDLE_TIMEOUT_MS", true},   {"WMBT_KV_DAEMON_WORKERS", true},
      {"WMBT_KV_SHM_DATA_BYTES", true},    {"WMBT_KV_RUN_DIR", false},
      {"WMBT_KV_SHM_ARENA_BYTES", true},   {"WMBT_KV_SHM_ARENAS", true},
      {"WMBT_KV_TCP_POLL", true},
  };
  auto add = [&](size_t i, const char* name, const char* type, const std::string& help) {
    flags[i].option = app.add_option(name, flags[i].value,
                                     help + " [env " + flags[i].setting + "]")
                          ->type_name(type);
  };
  add(0, "--data-dir", "DIR",
      "Data directory: LOCK, l1/ (RocksDB), l2/ (blocks when L2 is not S3); default "
      "~/.wombatkv");
  add(1, "--tcp", "HOST:PORT[,...]",
      "TCP listen addresses (IPv4, [IPv6], name); port 0 = any free port. Not loopback => "
      "auth token required");
  add(2, "--prefix", "NAME",
      "Shared-memory prefix clients attach to (their WMBT_KV_REMOTE_PREFIX)");
  add(3, "--http", "HOST:PORT", "Serve /healthz, /readyz and /metrics here");
  add(4, "--cache-bytes", "BYTES", "RAM payload cache budget, e.g. 8G; default 1/8 of RAM, <= 8 GiB");
  add(5, "--log-level", "LEVEL", "debug, info, warn or error; default warn");
  add(6, "--max-frame-bytes", "BYTES",
      "Largest request frame body (default 1025M: one 1 GiB sidecar with its head); larger "
      "frames are refused before allocation");
  add(7, "--shutdown-timeout", "MS",
      "On SIGTERM/SIGINT, how long running requests may finish (default 30000)");
  add(8, "--idle-timeout", "MS",
      "Close a TCP connection silent this long with nothing in flight (default 300000; 0 = "
      "never)");
  add(9, "--workers", "N", "Threads running requests (default 16)");
  add(10, "--shm-data-bytes", "BYTES",
      "Each shared-memory client's request and response data area (default 1G, virtual): the "
      "largest put batch or get response over shared memory");
  add(11, "--run-dir", "DIR",
      "Directory of the shared-memory control socket (default /tmp); clients set the same "
      "WMBT_KV_RUN_DIR");
  add(12, "--shm-arena-bytes", "BYTES",
      "Each namespace's payload arena (default 1G, virtual; touched pages stay resident): put "
      "payloads of 64 KiB and more live there and shared-memory gets pass them by reference; "
      "0 = gets copy");
  add(13, "--shm-arenas", "N",
      "Namespaces that get a payload arena, the first to put (default 8, at most 64)");
  add(14, "--tcp-poll", "0|1",
      "1 (default): after a wake-up with work, a TCP event loop polls for the next request "
      "before it sleeps; 0: only while one connection alone sends");
  std::vector<std::string> tokens;
  app.add_option("--auth-token", tokens,
                 "Accept this token; TOKEN=NS1,NS2 limits it to those namespaces. Repeatable; "
                 "replaces the variable [env WMBT_KV_AUTH_TOKENS, ';'-separated]")
      ->type_name("TOKEN[=NS,...]")
      ->allow_extra_args(false);
  cli::SettingFlags store_flags(app, NoStoreFlag(),
                                "Store settings (L2 backend, S3, caches, capacity)");
  app.footer(kFooter);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (const ClientSetting* c = ClientSettingFlag(argc, argv)) {
      std::fprintf(stderr,
                   "wombatkvd: %s is a client setting (%.*s), not the daemon's: %s. Set it "
                   "where the client runs; see `wombatkvd --help`\n",
                   cli::SettingFlagName(c->setting).c_str(), static_cast<int>(c->setting.size()),
                   c->setting.data(), c->instead);
      return kExitUsage;
    }
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      for (std::string_view key : {"--s3-access-key", "--s3-secret-key"}) {
        if (arg == key || arg.starts_with(std::string(key) + "=")) {
          std::fprintf(stderr,
                       "wombatkvd: %.*s: S3 credentials are variables only, since a command line "
                       "is visible to every local user: set WMBT_KV_S3_ACCESS_KEY and "
                       "WMBT_KV_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)\n",
                       static_cast<int>(key.size()), key.data());
          return kExitUsage;
        }
      }
    }
    std::fprintf(stderr, "wombatkvd: usage: %s; run `wombatkvd --help`\n", e.what());
    return kExitUsage;
  }

  // The environment, without the settings a flag gives (a flag overrides a variable, even one
  // whose value would not parse) nor the client ones.
  std::set<std::string> given;
  for (const FlagSetting& f : flags) {
    if (f.option->count() > 0) given.emplace(f.setting);
  }
  store_flags.AddGiven(&given);
  if (!tokens.empty()) given.emplace("WMBT_KV_AUTH_TOKENS");
  for (const ClientSetting& c : ClientSettings()) given.emplace(c.setting);  // not read here
  const EnvLookup env = Config::Without(ProcessEnv, std::move(given));
  auto config = Config::FromLookup(env);
  if (!config.ok()) return Usage("environment", config.status());
  auto settings = DaemonSettings::FromLookup(env);
  if (!settings.ok()) return Usage("environment", settings.status());
  Config& c = *config;
  DaemonSettings& s = *settings;
  for (const FlagSetting& f : flags) {
    if (f.option->count() == 0) continue;
    Status st = f.daemon ? s.Set(f.setting, f.value) : c.Set(f.setting, f.value);
    if (!st.ok()) return Usage(f.option->get_name(), SettingGivenAs(st, f.setting, ""));
  }
  std::string failed_flag;
  if (Status st = store_flags.ApplyTo(&c, &failed_flag); !st.ok()) return Usage(failed_flag, st);
  if (!tokens.empty()) {
    s.tokens.clear();
    for (const std::string& t : tokens) {
      if (t.empty()) {
        return Usage("--auth-token", Status::InvalidArgument("an empty token would let anyone in: "
                                                             "give a secret string"));
      }
      if (Status st = s.Set("WMBT_KV_AUTH_TOKENS", t); !st.ok()) return Usage("--auth-token", st);
    }
  }

  // Each line carries its time, unless the journal, which stamps lines itself, takes them.
  LogSink log =
      StderrLogSink(c.log_level, "wombatkvd", StderrGoesToJournal() ? nullptr : RealClock());
  WarnAboutUnknownSettings([&](const std::string& line) { log(LogLevel::kWarn, line); });
  // The effective settings (environment, then flags; secrets as "(set)"), for an operator who
  // asks with --log-level info.
  // Only those the daemon reads: not a client's (its own token included).
  auto read_here = [](std::string_view line) {
    const std::string_view name = line.substr(0, line.find('='));
    if (name == "WMBT_KV_AUTH_TOKEN") return false;
    return !IsClientSetting(name);
  };
  for (const std::string& text : {c.Describe(), s.Describe()}) {
    for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
      const std::string line = text.substr(at, nl - at);
      if (read_here(line)) log(LogLevel::kInfo, "setting " + line);
    }
  }

  DaemonOptions options;
  options.config = std::move(c);
  options.settings = std::move(s);
  options.version = "wombatkvd " WOMBATKV_VERSION;
  options.log = log;
  std::fprintf(stdout, "wombatkvd: version %s, pid %d\n", WOMBATKV_VERSION,
               static_cast<int>(getpid()));
  std::fflush(stdout);  // before any error line on stderr, also when stdout is not a terminal
  // A stop asked for while the store opens (a bootstrap from S3 may take minutes, or wait out an
  // unreachable endpoint's retries): nothing has been served yet, and whatever the open began
  // writing is recovered by the next start as after a crash, so the process exits at once. Once
  // the store is open (its "store:" line), signals are left to the main thread (below).
  std::mutex start_mu;
  bool opened = false;  // guarded by start_mu
  std::thread starting([&stop_signals, &start_mu, &opened] {
    for (;;) {
      const timespec tick{0, 20'000'000};
      const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
      std::lock_guard<std::mutex> g(start_mu);
      if (opened) {
        if (sig > 0) ::kill(::getpid(), sig);  // still pending for the main thread's sigwait
        return;
      }
      if (sig == SIGHUP) {
        std::fprintf(stderr, "wombatkvd: received SIGHUP while starting: ignored\n");
      } else if (sig == SIGTERM || sig == SIGINT) {
        std::fprintf(stderr,
                     "wombatkvd: received %s while starting: exiting before serving anything\n",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT");
        std::fflush(stderr);
        _exit(kExitOk);
      }
    }
  });
  auto store_opened = [&] {
    {
      std::lock_guard<std::mutex> g(start_mu);
      if (opened) return;
      opened = true;
    }
    starting.join();
  };
  options.announce = [&store_opened](const std::string& line) {
    if (line.starts_with("store:")) store_opened();
    std::fprintf(stdout, "wombatkvd: %s\n", line.c_str());
    std::fflush(stdout);
  };
  auto daemon = Daemon::Start(std::move(options));
  store_opened();  // also when the start failed
  if (!daemon.ok()) {
    std::fprintf(stderr, "wombatkvd: cannot start: %s\n", daemon.status().ToString().c_str());
    // A bad address or no listener at all is the command line's fault, like a bad flag.
    return daemon.status().code() == Code::kInvalidArgument ? kExitUsage : kExitFailed;
  }

  const int sig = NextSignal(stop_signals, /*stopping=*/false);
  std::fprintf(stdout, "wombatkvd: received %s: stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(stdout);
  // SIGINT while stopping (Ctrl-C again): the operator wants out now. Another SIGTERM is most
  // often the same request delivered twice (to the process and to its group).
  std::thread([stop_signals] {
    while (NextSignal(stop_signals, /*stopping=*/true) != SIGINT) {
    }
    std::fprintf(stderr, "wombatkvd: second SIGINT: exiting without finishing the stop\n");
    std::fflush(stderr);
    _exit(kExitFailed);
  }).detach();

  const size_t abandoned = (*daemon)->Shutdown();
  if (abandoned > 0) {
    std::fflush(stdout);
    _exit(kExitFailed);  // the store must not be closed under running requests (daemon.h)
  }
  daemon->reset();
  std::fprintf(stdout, "wombatkvd: stopped\n");
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace
}  // namespace wombatkv

int main(int argc, char** argv) {
  // A copy or link under another name still notes its data directory as held by wombatkvd.
  wombatkv::SetOwnerProgram("wombatkvd");
  return wombatkv::cli::RunMain("wombatkvd", wombatkv::Main, argc, argv);
}
