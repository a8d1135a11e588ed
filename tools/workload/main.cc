// wombatkv-workload: an engine-like workload against the embedded store in a data directory
// (default ~/.wombatkv): conversations sharing a system prompt, turn after turn, each turn doing
// lookup → restore (get, verified) → put the missing suffix → publish. Run it twice: the second
// run restores everything the first stored. See docs/workload.md.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "base/limits.h"
#include "base/setting_text.h"
#include "config/config.h"
#include "config/flags_given.h"
#include "config/unknown_settings.h"
#include "object/s3/l2_from_config.h"
#include "tools/wombatkv/exit_codes.h"
#include "tools/wombatkv/output.h"
#include "tools/workload/data_dir.h"
#include "tools/workload/progress.h"
#include "tools/workload/report.h"
#include "tools/workload/workload.h"

#ifndef WOMBATKV_VERSION
#define WOMBATKV_VERSION "unknown"
#endif

namespace wombatkv::workload {
namespace {

using cli::kExitOk;
using cli::kExitUsage;

// Bounds that keep a run's memory and batches sane (a turn may have to put a whole conversation).
inline constexpr uint32_t kConversationsMax = 100'000;
inline constexpr uint32_t kTurnsMax = 100'000;
inline constexpr uint64_t kConversationBytesMax = 8ull << 30;

struct Flags {
  Shape shape;
  std::string block_bytes_text = "256K";
  std::string data_dir;
  std::string ns;
  bool fresh = false;
  bool json = false;
  bool quiet = false;
};

Status CheckShape(Shape& s, const std::string& block_bytes_text) {
  auto bytes = ParseByteSize(block_bytes_text);
  if (!bytes || *bytes == 0 || *bytes > limits::kBlockBytesMax) {
    return Status::InvalidArgument("--block-bytes \"" + block_bytes_text +
                                   "\" must be a byte count from 1 to 256M (e.g. 4096, 64K, 1M)");
  }
  s.block_bytes = *bytes;
  if (s.conversations == 0 || s.conversations > kConversationsMax) {
    return Status::InvalidArgument("--conversations must be 1.." +
                                   std::to_string(kConversationsMax));
  }
  if (s.turns == 0 || s.turns > kTurnsMax) {
    return Status::InvalidArgument("--turns must be 1.." + std::to_string(kTurnsMax));
  }
  if (s.turn_blocks == 0) return Status::InvalidArgument("--turn-blocks must be at least 1");
  const uint64_t turn_max = s.fixed_turn_blocks ? s.turn_blocks : 2ull * s.turn_blocks;
  const uint64_t chain_max = s.system_blocks + uint64_t{s.turns} * turn_max;
  if (chain_max > limits::kBatchBlocksMax) {
    return Status::InvalidArgument(
        "a conversation could reach " + std::to_string(chain_max) + " blocks, more than " +
        std::to_string(limits::kBatchBlocksMax) +
        " (lower --system-blocks, --turns or --turn-blocks)");
  }
  if (chain_max * s.block_bytes > kConversationBytesMax) {
    return Status::InvalidArgument(
        "a conversation could reach " + cli::HumanBytes(chain_max * s.block_bytes) +
        ", more than the 8 GiB a turn may have to hold in memory (lower --block-bytes or --turns)");
  }
  return Status::Ok();
}

int Main(int argc, char** argv) {
  cli::Output out;
  out.SetProgram("wombatkv-workload");
  // A setting given as a flag is not read from the environment (docs/configuration.md).
  auto config = Config::FromLookup(
      Config::Without(ProcessEnv, SettingsGivenAsFlags(argc, argv,
                                                       {{"--data-dir", "WMBT_KV_DATA_DIR"},
                                                        {"-n", "WMBT_KV_NAMESPACE"},
                                                        {"--namespace", "WMBT_KV_NAMESPACE"}})));
  if (!config.ok()) return out.Error("environment", config.status(), "fix or unset that variable");

  Flags f;
  f.data_dir = config->data_dir;
  f.ns = config->ns;
  CLI::App app{
      "wombatkv-workload: run an engine-like workload against the embedded WombatKV store.\n"
      "Conversations share a system prompt; every turn looks up the conversation's block keys,\n"
      "restores the cached prefix (verifying every byte), puts the missing suffix and publishes\n"
      "the chain. Run it twice: the second run restores what the first stored.",
      "wombatkv-workload"};
  app.set_version_flag("--version", "wombatkv-workload " WOMBATKV_VERSION);
  app.add_option("--conversations", f.shape.conversations, "Conversations")
      ->type_name("N")->capture_default_str();
  app.add_option("--turns", f.shape.turns, "Turns per conversation")
      ->type_name("N")->capture_default_str();
  app.add_option("--system-blocks", f.shape.system_blocks,
                 "Blocks of the system prompt every conversation shares")
      ->type_name("N")->capture_default_str();
  app.add_option("--turn-blocks", f.shape.turn_blocks,
                 "Mean user+assistant blocks a turn appends: random in 1..2N per turn")
      ->type_name("N")->capture_default_str();
  app.add_flag("--fixed-turn-blocks", f.shape.fixed_turn_blocks,
               "Append exactly --turn-blocks blocks every turn");
  app.add_option("--block-bytes", f.block_bytes_text, "Block size: bytes, or with K/M suffix")
      ->type_name("BYTES")->capture_default_str();
  app.add_option("--seed", f.shape.seed,
                 "Seed of tokens and payloads (same seed + shape = same keys and bytes)")
      ->type_name("N")->capture_default_str();
  app.add_option("--data-dir", f.data_dir, "Data directory [env WMBT_KV_DATA_DIR]")
      ->type_name("DIR")->capture_default_str();
  app.add_option("-n,--namespace", f.ns, "Namespace [env WMBT_KV_NAMESPACE]")
      ->type_name("NS")->capture_default_str();
  app.add_flag("--fresh", f.fresh,
               "Wipe the data directory first (only if it holds nothing but LOCK, SEAT, l1/, "
               "l2/, cache/, gc-held*/; SEAT is kept)");
  app.add_flag("--json", f.json, "Print the summary as one JSON document on stdout");
  app.add_flag("-q,--quiet", f.quiet, "No progress line");
  app.footer(
      "Examples:\n"
      "  wombatkv-workload                        # 8 conversations x 6 turns, 256 KiB blocks\n"
      "  wombatkv-workload                        # again: everything is restored from disk\n"
      "  wombatkv-workload --fresh --conversations 32 --turns 10 --block-bytes 1M\n"
      "  wombatkv-workload --conversations 2 --turns 2 --block-bytes 4096 --json\n"
      "\nThe store's other settings come from WMBT_KV_* variables (docs/configuration.md): e.g.\n"
      "WMBT_KV_BUCKET, WMBT_KV_S3_ENDPOINT, WMBT_KV_S3_ACCESS_KEY and WMBT_KV_S3_SECRET_KEY run "
      "it\n"
      "on S3 (docs/s3.md); WMBT_KV_CACHE_BYTES sizes the RAM cache.\n"
      "\nExit codes: 0 ok, 2 usage, 4 a restored byte mismatched (corruption), 5 data directory\n"
      "locked by another process (or --fresh refused), 6 unavailable, 7 internal; a store error\n"
      "maps as in `wombatkv --help`. Reference: docs/workload.md\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return out.Usage("usage", e.what(), "run `wombatkv-workload --help`");
  }
  out.Configure(f.json, f.quiet);
  WarnAboutUnknownSettings([&](const std::string& line) { out.Warn(line); });
  if (Status s = CheckShape(f.shape, f.block_bytes_text); !s.ok()) {
    return out.Error("arguments", s, "run `wombatkv-workload --help`");
  }
  if (Status s = ValidateNamespace(f.ns); !s.ok()) {
    return out.Error("--namespace", s, cli::kNamespaceHint);
  }
  if (f.data_dir.empty()) {
    return out.Usage("--data-dir", "the data directory is empty", "pass --data-dir DIR");
  }

  if (f.fresh && !config->s3_bucket.empty()) {
    // What earlier runs stored is in the bucket: wiping the local directory would not make the
    // run fresh (L1 is rebuilt from L2), and a workload deletes nothing in a bucket.
    return out.Usage("--fresh",
                     "with an S3 L2 (WMBT_KV_BUCKET " + config->s3_bucket +
                         ") earlier runs' chains are in the bucket, which --fresh does not wipe",
                     "leave out --fresh and give WMBT_KV_S3_PREFIX a prefix no run has used");
  }
  if (f.fresh) {
    if (Status s = WipeDataDir(PosixFileSystem(), f.data_dir); !s.ok()) {
      return out.Error("--fresh " + f.data_dir, s,
                       "stop the process using it, or pick another --data-dir");
    }
  }
  // S3 as L2 when WMBT_KV_BUCKET is set (docs/s3.md); declared before the store: outlives it.
  // Null without a bucket; an error for S3 settings without one (docs/configuration.md).
  auto opened_l2 = OpenL2FromConfig(
      *config, L2Env{RealClock(), nullptr, [&out](const std::string& m) { out.Warn(m); }});
  if (!opened_l2.ok()) {
    return out.Error(
        config->s3_bucket.empty() ? "S3 settings" : "open S3 bucket " + config->s3_bucket,
        opened_l2.status(), "check the WMBT_KV_S3_* settings (docs/s3.md)");
  }
  std::unique_ptr<ObjectStore> l2 = std::move(opened_l2).value();

  StoreOptions options;
  options.data_dir = f.data_dir;
  options.l2_prefix = config->l2_prefix;
  if (config->cache_bytes > 0) options.cache_bytes_max = config->cache_bytes;
  options.upload_threads = config->upload_threads;
  options.l2_packed_object_bytes_max = config->l2_packed_bytes;
  options.block_compress_level = config->block_compress_level;
  options.clock = RealClock();
  options.object_store = l2.get();  // null: the local directory under --data-dir
  if (l2) options.disk_cache_bytes_max = DiskCacheBudget(*config, f.data_dir);
  options.log = [&out](LogLevel level, const std::string& message) {
    if (level >= LogLevel::kWarn) out.Warn(message);
  };
  auto opened = Store::Open(options);
  if (!opened.ok()) {
    std::string hint;
    if (opened.status().code() == Code::kFailedPrecondition) {
      hint = "--data-dir selects another directory";
    }
    return out.Error("open data directory " + f.data_dir, opened.status(), hint);
  }
  Store& store = **opened;

  RunInfo info;
  info.shape = f.shape;
  info.ns = f.ns;
  info.fp = SyntheticFingerprint(f.shape);
  info.data_dir = f.data_dir;
  info.l2 = store.DescribeL2();
  info.fresh = f.fresh;
  info.at_start = store.Stats();

  Progress progress(RealClock(), stderr, isatty(STDERR_FILENO) != 0, !f.quiet);
  WorkloadOptions wopt;
  wopt.shape = f.shape;
  wopt.ns = f.ns;
  wopt.fp = info.fp;
  wopt.clock = RealClock();
  wopt.on_turn = [&progress](const Counters& c) { progress.Update(c); };
  WorkloadResult result = RunWorkload(store, wopt);
  progress.Finish();
  info.at_end = store.Stats();

  if (f.json) {
    out.Json(SummaryJson(info, result));
  } else {
    PrintSummary(stdout, info, result);
  }
  std::fflush(stdout);
  if (!result.error.ok()) return out.Error(result.error_what, result.error);
  if (result.counters.mismatched_blocks > 0) {
    return out.Error(
        "verify",
        Status::Corruption(std::to_string(result.counters.mismatched_blocks) +
                           " restored blocks differ from the bytes generated for their keys"),
        "the store served wrong bytes: keep " + f.data_dir + " for diagnosis and report it");
  }
  return kExitOk;
}

}  // namespace
}  // namespace wombatkv::workload

int main(int argc, char** argv) {
  return wombatkv::cli::RunMain("wombatkv-workload", wombatkv::workload::Main, argc, argv);
}
