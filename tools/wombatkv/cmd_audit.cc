// audit, du, gc: what is stored, whether it is consistent, and orphan collection. They work on
// the planes directly (offline_planes.h), not through a Store.
#include <unistd.h>

#include <map>
#include <memory>
#include <optional>

#include "audit/audit.h"
#include "audit/repair.h"
#include "cache/disk_cache.h"
#include "config/config.h"
#include "gc/orphan_gc.h"
#include "store/data_dir_owner.h"
#include "tools/wombatkv/audit_render.h"
#include "tools/wombatkv/commands.h"
#include "tools/wombatkv/exit_codes.h"
#include "tools/wombatkv/offline_planes.h"
#include "tools/wombatkv/progress_line.h"

namespace wombatkv::cli {
namespace {

constexpr size_t kReadThreads = 8;  // parallel head and blob reads (S3 round trips overlap)
constexpr size_t kOrphansShownMax = 10;

// --grace DURATION, else WMBT_KV_GC_GRACE. The flag needs its unit: it decides what is deleted,
// so "5" is not guessed to mean seconds (the variable's bare digits are, as documented); "0" is
// zero in any unit.
std::optional<uint64_t> Grace(Context& ctx, const std::string& text, int* code) {
  if (text.empty()) return ctx.opts.config.gc_grace_us;
  auto us = ParseDurationFlag(text);
  if (!us) {
    *code = ctx.out.Usage("--grace", NotADuration(text), kDurationFlagHint);
    return std::nullopt;
  }
  return *us;
}

std::string PrefixOf(const Context& ctx) {
  return ctx.opts.config.l2_prefix.empty() ? std::string("kv") : ctx.opts.config.l2_prefix;
}

bool ShowProgress(const Context& ctx) {
  return isatty(STDERR_FILENO) && !ctx.out.json() && !ctx.out.quiet();
}

std::string ProgressText(const audit::AuditProgress& p) {
  if (p.phase == "listing") return "listing L2: " + std::to_string(p.done) + " keys";
  if (p.phase == "verifying") return "verifying blobs: " + std::to_string(p.done);
  return "reading L1: " + std::to_string(p.done) + " records";
}

// What audit, du and gc start from: the grace period, the planes, a pool for parallel reads.
struct Setup {
  uint64_t grace_us = 0;
  OfflinePlanes planes;
  std::unique_ptr<Executor> executor;
};

int Prepare(Context& ctx, std::string_view command, const std::string& grace_text, bool want_l1,
            bool writes, Setup* out) {
  int code = ctx.RequireLocalPlanes(command);
  if (code != kExitOk || (code = ctx.RequireDataDir()) != kExitOk) return code;
  auto grace = Grace(ctx, grace_text, &code);
  if (!grace) return code;
  out->grace_us = *grace;
  if ((code = OpenOfflinePlanes(ctx, want_l1, writes, &out->planes)) != kExitOk) return code;
  out->executor = NewThreadPoolExecutor(kReadThreads, "wombatkv-audit");
  return kExitOk;
}

// Where `gc` and `audit --repair` keep the bytes of the orphans they delete until their re-check
// (gc::GcOptions::hold_dir): a command stopped between its deletes and its re-check (^C, a crash)
// leaves them there, and the next one does that re-check. Its own LOCK keeps two commands from
// sharing it; a running store on the data directory has its own (gc-held).
struct HoldDir {
  std::string path;
  std::unique_ptr<FileLock> lock;
};

int LockHoldDir(Context& ctx, std::string_view command, HoldDir* out) {
  FileSystem* fs = PosixFileSystem();
  out->path = ctx.opts.data_dir + "/gc-held-cli";
  Status made = fs->CreateDirs(out->path);
  auto lock = made.ok() ? fs->LockFile(out->path + "/LOCK", DataDirOwnerNote())
                        : Result<std::unique_ptr<FileLock>>(made);
  if (lock.ok()) {
    out->lock = std::move(lock).value();
    return kExitOk;
  }
  if (lock.status().code() == Code::kFailedPrecondition) {
    return ctx.out.Error(command,
                         Status::FailedPrecondition("another command is collecting orphans with "
                                                    "this data directory: " +
                                                    lock.status().message()),
                         "wait for it to end, then run this again");
  }
  return ctx.out.Error(std::string(command) + ": open " + out->path, lock.status(),
                       "check that this user may write --data-dir (or WMBT_KV_DATA_DIR)");
}

audit::AuditOptions AuditOptionsFor(const Context& ctx, const Setup& setup, bool quick) {
  audit::AuditOptions options;
  options.l2_prefix = PrefixOf(ctx);
  options.quick = quick;
  options.grace_us = setup.grace_us;
  options.executor = setup.executor.get();
  return options;
}

Result<audit::AuditReport> AuditWithProgress(Context& ctx, Setup& setup,
                                             const audit::AuditOptions& options) {
  ProgressLine progress(RealClock(), stderr, ShowProgress(ctx));
  return audit::RunAudit(setup.planes.l2, setup.planes.l1, RealClock(), options,
                         [&](const audit::AuditProgress& p) { progress.Update(ProgressText(p)); });
}

// ---- audit ----------------------------------------------------------------------------------

struct AuditArgs {
  bool quick = false;
  bool repair = false;
  std::string grace;
};

// Violations left after a repair: those it cannot fix, those it failed to, corrupt blobs it
// deleted (missing until a put brings them back), and those it skipped because they looked fine
// when checked again — a sound blob whose length a head contradicts is the head's problem, and
// counting it as fixed said "repaired" while every audit after found it again.
size_t Remaining(const audit::AuditReport& r, const std::optional<audit::RepairReport>& fixed,
                 bool l1_repairable) {
  if (!fixed) return r.violations.size();
  size_t left = fixed->failures();
  for (const audit::Violation& v : r.violations) {
    const bool l1 = v.kind == audit::ViolationKind::kL1Unreadable ||
                    v.kind == audit::ViolationKind::kL1Stale ||
                    v.kind == audit::ViolationKind::kL1MissingHead;
    if (!audit::Repairable(v.kind) || (l1 && !l1_repairable)) ++left;
  }
  for (const audit::RepairAction& a : fixed->actions) {
    if (a.ok && (a.action == "delete_blob" || a.action == "skip")) ++left;
  }
  return left;
}

void PrintViolations(Context& ctx, const audit::AuditReport& r) {
  if (r.violations.empty()) {
    ctx.out.Line("violations: none");
    return;
  }
  ctx.out.Line("violations: " + std::to_string(r.violations.size()) + " (" +
               std::to_string(r.RepairableCount()) + " repairable by --repair)");
  std::vector<std::vector<std::string>> rows;
  for (const audit::Violation& v : r.violations) {
    rows.push_back({std::string(audit::KindName(v.kind)), v.ns.empty() ? "-" : v.ns, v.key,
                    v.detail});
  }
  ctx.out.Table({"KIND", "NAMESPACE", "KEY", "DETAIL"}, rows);
}

void PrintOrphans(Context& ctx, const audit::AuditReport& r, uint64_t grace_us) {
  if (r.orphans.empty()) {
    ctx.out.Line("orphans: none");
    return;
  }
  ctx.out.Line("orphans: " + std::to_string(r.total.orphans) + " (" +
               HumanBytes(r.total.orphan_bytes) + "); " + std::to_string(r.expired_orphans) +
               " older than the grace period of " + HumanDuration(grace_us) +
               (r.expired_orphans > 0 ? " (`wombatkv gc` deletes them)" : ""));
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.orphans.size() && i < kOrphansShownMax; ++i) {
    const gc::OrphanBlob& o = r.orphans[i];
    rows.push_back({o.key, std::to_string(o.bytes),
                    o.age_known ? HumanDuration(o.age_us) : std::string("unknown")});
  }
  ctx.out.Table({"ORPHAN (oldest first)", "BYTES", "AGE"}, rows);
}

void PrintRepair(Context& ctx, const audit::RepairReport& fixed) {
  for (const audit::RepairAction& a : fixed.actions) {
    ctx.out.Line("repair: " + a.action + " " + a.key + ": " + (a.ok ? "" : "FAILED: ") + a.detail);
  }
  if (fixed.gc_ran) {
    const gc::GcReport& g = fixed.gc;
    ctx.out.Line("repair: orphan gc: deleted " + std::to_string(g.deleted) + " of " +
                 std::to_string(g.expired) + " expired orphans (" + HumanBytes(g.freed_bytes) +
                 " freed), " + std::to_string(g.restored) + " restored, " +
                 std::to_string(g.delete_failures) + " failed");
    for (const std::string& p : g.problems) ctx.out.Line("repair: orphan gc: " + p);
  }
}

int RunAudit(Context& ctx, const AuditArgs& a) {
  Setup setup;
  const char* command = a.repair ? "audit --repair" : "audit";
  const int code = Prepare(ctx, command, a.grace, /*want_l1=*/true, /*writes=*/a.repair, &setup);
  if (code != kExitOk) return code;
  OfflinePlanes& planes = setup.planes;
  const uint64_t grace_us = setup.grace_us;
  const audit::AuditOptions options = AuditOptionsFor(ctx, setup, a.quick);
  auto report = AuditWithProgress(ctx, setup, options);
  if (!report.ok()) return Fail(ctx, "audit", report.status());
  if (planes.l1_unopenable) {
    report->violations.push_back(audit::Violation{audit::ViolationKind::kL1Unreadable, "",
                                                  ctx.opts.data_dir + "/l1", planes.l1_note});
  }

  std::optional<audit::RepairReport> fixed;
  if (a.repair) {
    if (planes.l1_unopenable) {
      // What a store does at open: an L1 RocksDB refuses is deleted and rebuilt from L2.
      const std::string l1_dir = ctx.opts.data_dir + "/l1";
      Status s = PosixFileSystem()->DeleteTree(l1_dir);
      auto l1 = s.ok() ? OpenRocksDbMetaStore(l1_dir) : Result<std::unique_ptr<MetaStore>>(s);
      if (!l1.ok()) return Fail(ctx, "audit --repair: recreate " + l1_dir, l1.status());
      planes.owned_l1 = std::move(l1).value();
      planes.l1 = planes.owned_l1.get();
    }
    HoldDir hold;
    if (int code = LockHoldDir(ctx, "audit --repair", &hold); code != kExitOk) return code;
    audit::RepairOptions ro;
    ro.hold_fs = PosixFileSystem();
    ro.hold_dir = hold.path;
    ro.l2_prefix = options.l2_prefix;
    ro.grace_us = grace_us;
    ro.list_lag_us = ListLagMicros(ctx.opts.config);  // WMBT_KV_S3_LIST_LAG
    ro.executor = setup.executor.get();
    auto r = audit::Repair(planes.l2, planes.l1, RealClock(), *report, ro);
    if (!r.ok()) return Fail(ctx, "audit --repair", r.status());
    fixed = std::move(r).value();
  }
  const size_t remaining = Remaining(*report, fixed, planes.l1 != nullptr);

  if (ctx.out.json()) {
    nlohmann::json violations = nlohmann::json::array();
    nlohmann::json counts = nlohmann::json::object();
    for (audit::ViolationKind k : audit::kAllViolationKinds) {
      counts[std::string(audit::KindName(k))] = report->CountOf(k);
    }
    for (const audit::Violation& v : report->violations) {
      violations.push_back({{"kind", std::string(audit::KindName(v.kind))},
                            {"namespace", v.ns},
                            {"key", v.key},
                            {"detail", v.detail},
                            {"repairable", audit::Repairable(v.kind)}});
    }
    nlohmann::json orphans = nlohmann::json::array();
    for (const gc::OrphanBlob& o : report->orphans) orphans.push_back(OrphanJson(o, grace_us));
    nlohmann::json usage = nlohmann::json::array();
    for (const audit::UsageRow& row : report->usage) usage.push_back(UsageJson(row));
    nlohmann::json doc = {
        {"l2", planes.l2->Describe()},
        {"prefix", options.l2_prefix},
        {"quick", a.quick},
        {"l1_checked", report->l1_checked},
        {"l1_note", planes.l1_note},
        {"keys_listed", report->keys_listed},
        {"heads_read", report->heads_read},
        {"blobs_verified", report->blobs_verified},
        {"sidecars_verified", report->sidecars_verified},
        {"bytes_read", report->bytes_read},
        {"violations", violations},
        {"violation_counts", counts},
        {"orphans", {{"count", report->total.orphans},
                     {"bytes", report->total.orphan_bytes},
                     {"expired", report->expired_orphans},
                     {"expired_bytes", report->expired_orphan_bytes},
                     {"grace_seconds", grace_us / 1000000},
                     {"list", orphans}}},
        {"usage", usage},
        {"total", CountsJson(report->total)},
        {"remaining_violations", remaining},
        {"clean", remaining == 0}};
    if (fixed) doc["repair"] = RepairJson(*fixed, grace_us);
    ctx.out.Json(doc);
  } else {
    ctx.out.Line("L2 " + planes.l2->Describe() + " (prefix " + options.l2_prefix + "): " +
                 std::to_string(report->keys_listed) + " keys, " +
                 std::to_string(report->heads_read) + " heads read, " +
                 (a.quick ? std::string("blobs checked by size only")
                          : std::to_string(report->blobs_verified) + " blobs and " +
                                std::to_string(report->sidecars_verified) +
                                " sidecars verified") +
                 ", " + HumanBytes(report->bytes_read) + " read");
    ctx.out.Line(report->l1_checked ? "L1 checked against L2"
                                    : "L1 not checked: " + planes.l1_note);
    PrintViolations(ctx, *report);
    PrintOrphans(ctx, *report, grace_us);
    if (fixed) PrintRepair(ctx, *fixed);
    if (remaining == 0) {
      ctx.out.Line(fixed ? "result: repaired; run `wombatkv audit` again to confirm"
                         : "result: clean");
    } else if (fixed) {
      ctx.out.Line("result: " + std::to_string(remaining) +
                   " violation(s) remain: stray keys are left for their owner to remove, a "
                   "missing blob comes back when its block is put again");
    } else {
      const size_t repairable = report->RepairableCount();
      ctx.out.Line("result: " + std::to_string(remaining) + " violation(s) found; " +
                   (repairable > 0 ? "`wombatkv audit --repair` fixes " +
                                         std::to_string(repairable) + " of them"
                                   : std::string("none can be repaired automatically (see "
                                                 "DETAIL)")));
    }
  }
  return remaining == 0 ? kExitOk : kExitCorruption;
}

// ---- du -------------------------------------------------------------------------------------

// The local disk cache plane (<data_dir>/cache/, docs/capacity.md): what its files hold, walked
// without opening the cache, and the budget the settings give it.
struct DiskCachePlane {
  std::string dir;
  bool enabled = false;  // an S3 L2 and a budget above 0
  uint64_t budget_bytes = 0;
  uint64_t files = 0, bytes = 0;
  std::map<std::string, DiskCacheUsage> per_ns;
};

DiskCachePlane MeasureDiskCache(const Context& ctx) {
  DiskCachePlane p;
  p.dir = ctx.opts.data_dir + "/cache";
  p.budget_bytes = DiskCacheBudget(ctx.opts.config, ctx.opts.data_dir);
  p.enabled = p.budget_bytes > 0;
  auto scan = DiskCache::Scan(PosixFileSystem(), p.dir);
  if (!scan.ok()) return p;  // no cache directory: nothing cached
  for (const auto& [ns, u] : *scan) {
    if (ctx.ns_given && ns != ctx.opts.ns) continue;
    p.per_ns[ns] = u;
    p.files += u.files;
    p.bytes += u.bytes;
  }
  return p;
}

nlohmann::json DiskCacheJson(const DiskCachePlane& p) {
  nlohmann::json per_ns = nlohmann::json::object();
  for (const auto& [ns, u] : p.per_ns) per_ns[ns] = {{"files", u.files}, {"bytes", u.bytes}};
  return {{"dir", p.dir},         {"enabled", p.enabled}, {"budget_bytes", p.budget_bytes},
          {"files", p.files},     {"bytes", p.bytes},     {"namespaces", per_ns}};
}

int RunDu(Context& ctx) {
  Setup setup;
  if (int code = Prepare(ctx, "du", "", /*want_l1=*/true, /*writes=*/false, &setup);
      code != kExitOk)
    return code;
  const OfflinePlanes& planes = setup.planes;
  // Quick: sizes come from the listing; only heads are read (and the 48-byte headers of blobs
  // listed under their raw size: compressed ones).
  const audit::AuditOptions options = AuditOptionsFor(ctx, setup, /*quick=*/true);
  auto report = AuditWithProgress(ctx, setup, options);
  if (!report.ok()) return Fail(ctx, "du", report.status());
  const DiskCachePlane disk = MeasureDiskCache(ctx);
  std::vector<const audit::UsageRow*> rows;
  audit::UsageCounts total;
  for (const audit::UsageRow& row : report->usage) {
    if (ctx.ns_given && row.ns != ctx.opts.ns) continue;
    rows.push_back(&row);
    if (!row.fp) total.Add(row.counts);
  }
  if (ctx.out.json()) {
    nlohmann::json j = nlohmann::json::array();
    for (const audit::UsageRow* row : rows) j.push_back(UsageJson(*row));
    ctx.out.Json({{"l2", planes.l2->Describe()},
                  {"prefix", options.l2_prefix},
                  {"l1_checked", report->l1_checked},
                  {"l1_note", planes.l1_note},
                  {"rows", j},
                  {"total", CountsJson(total)},
                  {"disk_cache", DiskCacheJson(disk)},
                  {"violations", report->violations.size()}});
    return kExitOk;
  }
  std::vector<std::vector<std::string>> cells;
  for (const audit::UsageRow* row : rows) cells.push_back(UsageCells(*row, report->l1_checked));
  audit::UsageRow total_row{"TOTAL", std::nullopt, total};
  cells.push_back(UsageCells(total_row, report->l1_checked));
  cells.back()[1] = "";
  ctx.out.Table(UsageHeader(), cells);
  if (!report->l1_checked) ctx.out.Note("L1 columns: not read: " + planes.l1_note);
  ctx.out.Note("bytes are object sizes in L2 (48-byte envelopes included); a fingerprint row "
               "counts the blobs its heads name, the namespace row (*) every blob once");
  if (disk.enabled || disk.files > 0) {
    ctx.out.Line("disk cache " + disk.dir + ": " + std::to_string(disk.files) + " files, " +
                 HumanBytes(disk.bytes) + " of a budget of " +
                 (disk.enabled ? HumanBytes(disk.budget_bytes)
                               : std::string("none (not used with this L2)")));
    for (const auto& [ns, u] : disk.per_ns) {
      ctx.out.Line("  " + ns + ": " + std::to_string(u.files) + " files, " + HumanBytes(u.bytes));
    }
  }
  if (!report->violations.empty()) {
    ctx.out.Warn(std::to_string(report->violations.size()) +
                 " inconsistencies seen while measuring; run `wombatkv audit`");
  }
  return kExitOk;
}

// ---- gc -------------------------------------------------------------------------------------

struct GcArgs {
  std::string grace;
  bool dry_run = false;
};

int RunGc(Context& ctx, const GcArgs& a) {
  Setup setup;
  if (int code = Prepare(ctx, "gc", a.grace, /*want_l1=*/false, /*writes=*/true, &setup);
      code != kExitOk) {
    return code;
  }
  const uint64_t grace_us = setup.grace_us;
  gc::GcOptions options;
  options.l2_prefix = PrefixOf(ctx);
  options.grace_us = setup.grace_us;
  options.dry_run = a.dry_run;
  options.list_lag_us = ListLagMicros(ctx.opts.config);  // WMBT_KV_S3_LIST_LAG
  bool said = false;
  options.on_list_lag_wait = [&](uint64_t wait_us) {
    if (std::exchange(said, true)) return;
    ctx.out.Note("waiting " + HumanDuration(wait_us) +
                 " (WMBT_KV_S3_LIST_LAG) for S3 listings to show every chain head written so "
                 "far, before deleting orphans no head names, and again before re-checking "
                 "what was deleted");
  };
  options.executor = setup.executor.get();
  if (ctx.ns_given) options.only_ns = ctx.opts.ns;
  HoldDir hold;
  if (!a.dry_run) {
    if (int code = LockHoldDir(ctx, "gc", &hold); code != kExitOk) return code;
    options.hold_fs = PosixFileSystem();
    options.hold_dir = hold.path;
  }
  gc::OrphanCollector collector(setup.planes.l2, RealClock(), options);
  ProgressLine progress(RealClock(), stderr, ShowProgress(ctx));
  auto report = collector.RunPass([&](const gc::ScanProgress& p) {
    progress.Update("listing L2: " + std::to_string(p.keys_listed) + " keys");
  });
  progress.Finish();
  if (!report.ok()) return Fail(ctx, "gc", report.status());
  const gc::GcReport& r = *report;
  if (ctx.out.json()) {
    ctx.out.Json(GcJson(r, grace_us, a.dry_run));
  } else {
    ctx.out.Line("orphans: " + std::to_string(r.orphans) + " (" + HumanBytes(r.orphan_bytes) +
                 ") in " + std::to_string(r.namespaces) + " namespaces; " +
                 std::to_string(r.expired) + " older than " + HumanDuration(grace_us));
    std::vector<std::vector<std::string>> rows;
    for (const gc::OrphanBlob& o : r.removed) {
      rows.push_back({o.key, std::to_string(o.bytes),
                      o.age_known ? HumanDuration(o.age_us) : std::string("unknown")});
    }
    if (!rows.empty()) {
      ctx.out.Table({a.dry_run ? "WOULD DELETE" : "DELETED", "BYTES", "AGE"}, rows);
    }
    if (a.dry_run) {
      ctx.out.Line("dry run: would delete " + std::to_string(r.expired) + " orphans (" +
                   HumanBytes(r.expired_bytes) + ")");
    } else {
      ctx.out.Line("deleted " + std::to_string(r.deleted) + " orphans, " +
                   HumanBytes(r.freed_bytes) + " freed; " + std::to_string(r.restored) +
                   " restored (a head published meanwhile names them); " +
                   std::to_string(r.delete_failures) + " failed (retried by the next run)");
    }
    if (r.recovered > 0) {
      ctx.out.Line("re-checked " + std::to_string(r.recovered) + " orphans an earlier run " +
                   "deleted and was stopped before re-checking (" + hold.path + ")");
    }
    for (const std::string& p : r.problems) ctx.out.Warn(p);
  }
  if (r.namespaces_skipped > 0) return kExitCorruption;
  if (r.delete_failures > 0) return kExitUnavailable;
  return kExitOk;
}

}  // namespace

void AddAuditCommands(CLI::App& root, CommandTable& table) {
  auto audit_args = std::make_shared<AuditArgs>();
  CLI::App* audit = root.add_subcommand(
      "audit", "Check every object in L2 and the L1 records against docs/layout.md");
  audit->add_flag("--quick", audit_args->quick,
                  "Check blobs by existence and listed size only (no payload or sidecar reads; "
                  "a blob under its raw size has its 48-byte header read)");
  audit->add_flag("--repair", audit_args->repair,
                  "Fix what is safe: delete unreadable heads and corrupt blobs/sidecars, rebuild "
                  "L1 from L2, delete expired orphans; print what was done");
  audit->add_option("--grace", audit_args->grace,
                    "Orphans older than this are expired [env WMBT_KV_GC_GRACE, default 1h]")
      ->type_name("DURATION");
  audit->footer(
      "Checks: keys outside the layout (stray_key); heads that do not decode (head_unreadable) or\n"
      "name another chain (head_names_another_chain); blobs a head names that are missing\n"
      "(blob_missing) or fail their envelope/hash/length (blob_corrupt); sidecars that fail their\n"
      "hash (sidecar_corrupt); L1 records that fail their CRC (l1_unreadable), name heads L2 does\n"
      "not have (l1_stale) or miss heads L2 has (l1_missing_head). Orphans (blobs no head names)\n"
      "are listed with their age; they are not violations.\n"
      "Exits 0 when clean, 4 when violations are found (after --repair: when some remain).\n"
      "When another process owns the data directory (its LOCK), L1 belongs to it: only L2 is\n"
      "checked, and --repair leaves L1 alone (L2 repairs and orphan GC are safe to run anyway).\n"
      "Shows a progress line on a terminal.\n\n" +
      HelpFooter({
          "wombatkv audit",
          "wombatkv audit --quick --json | python3 -m json.tool",
          "wombatkv audit --repair --grace 2h",
      }));
  table.Add(audit, [audit_args](Context& ctx) { return RunAudit(ctx, *audit_args); });

  CLI::App* du = root.add_subcommand(
      "du", "Bytes and counts per namespace and fingerprint, per plane (L1 records, L2 objects)");
  du->footer(
      "Columns: L1 head records and the blocks they index (what L0 loads at open), L1 pending\n"
      "puts; L2 heads, blobs, orphans, sidecars and stray keys with their object sizes (envelopes\n"
      "included). Rows: each namespace (*) then each fingerprint in it; -n NS shows one\n"
      "namespace. A fingerprint row counts the blobs its heads name; the namespace row counts\n"
      "each blob once. L1 columns show \"-\" when another process owns the data directory.\n"
      "Then the local disk cache (DIR/cache/, S3 L2 only): files, bytes and budget, per\n"
      "namespace.\n\n" +
      HelpFooter({
          "wombatkv du",
          "wombatkv -n team du --json",
          "Takes no arguments. Reads every head and no blob payload (only the 48-byte headers of "
          "blobs whose listed size is not their raw size: compressed ones).",
      }));
  table.Add(du, RunDu);

  auto gc_args = std::make_shared<GcArgs>();
  CLI::App* gc = root.add_subcommand(
      "gc", "Delete orphan blobs (named by no chain head) older than the grace period");
  gc->add_option("--grace", gc_args->grace,
                 "Only orphans older than this go [env WMBT_KV_GC_GRACE, default 1h]")
      ->type_name("DURATION");
  gc->add_flag("--dry-run", gc_args->dry_run, "List what would be deleted; delete nothing");
  gc->footer(
      "Every namespace unless -n NS is given. Safe while engines publish on this or other hosts\n"
      "(docs/layout.md §7): each deleted orphan is read first, and put back if a head published\n"
      "during the run names it. A namespace with an unreadable head is skipped (exit 4; run\n"
      "`wombatkv audit --repair`); a failed delete is retried by the next run (exit 6).\n"
      "With listings that lag writes (WMBT_KV_S3_LIST_LAG; default 10s on S3, 0 on the local\n"
      "directory) a run that deletes waits that long before its first delete (heads written\n"
      "just before its listing are listed again) and before each batch's re-check.\n"
      "The bytes it deletes are kept in DATA_DIR/gc-held-cli/ until that re-check: a run\n"
      "stopped in between (^C, a crash) is finished by the next one. One run at a time per\n"
      "data directory (exit 5 for a second); does not need the data directory's LOCK.\n\n" +
      HelpFooter({
          "wombatkv gc --dry-run",
          "wombatkv gc --grace 30m",
          "wombatkv -n team gc --json",
      }));
  table.Add(gc, [gc_args](Context& ctx) { return RunGc(ctx, *gc_args); });
}

}  // namespace wombatkv::cli
