// stat, refresh: the store as a whole.
#include <memory>

#include "tools/wombatkv/commands.h"
#include "tools/wombatkv/exit_codes.h"

namespace wombatkv::cli {
namespace {

int RunStat(Context& ctx) {
  int code = 0;
  Store* store = ctx.OpenStore(&code);
  if (!store) return code;
  const StoreStats s = store->Stats();
  // One table drives both renderings, grouped by plane as in StoreStats.
  const std::vector<std::pair<const char*, uint64_t>> fields = {
      {"l0_blocks", s.l0_blocks},
      {"l0_chains", s.l0_chains},
      {"l0_memory_bytes", s.l0_memory_bytes},
      {"lookups", s.lookups},
      {"lookup_keys", s.lookup_keys},
      {"lookup_hit_keys", s.lookup_hit_keys},
      {"cache_bytes", s.cache_bytes},
      {"cache_entries", s.cache_entries},
      {"cache_pinned_bytes", s.cache_pinned_bytes},
      {"cache_hits", s.cache_hits},
      {"cache_misses", s.cache_misses},
      {"cache_evictions", s.cache_evictions},
      {"puts", s.puts},
      {"put_bytes", s.put_bytes},
      {"publishes", s.publishes},
      {"publish_conflicts", s.publish_conflicts},
      {"gets", s.gets},
      {"get_hits", s.get_hits},
      {"get_misses", s.get_misses},
      {"get_bytes", s.get_bytes},
      {"pending_blocks", s.pending_blocks},
      {"heads_compacted", s.heads_compacted},
      {"l2_puts", s.l2_puts},
      {"l2_put_bytes", s.l2_put_bytes},
      {"l2_gets", s.l2_gets},
      {"l2_get_bytes", s.l2_get_bytes},
      {"l2_errors", s.l2_errors},
      {"corruptions_detected", s.corruptions_detected},
      {"disk_cache_bytes", s.disk_cache_bytes},
      {"disk_cache_files", s.disk_cache_files},
      {"disk_cache_budget_bytes", s.disk_cache_budget_bytes},
      {"disk_cache_hits", s.disk_cache_hits},
      {"disk_cache_misses", s.disk_cache_misses},
      {"disk_cache_evictions", s.disk_cache_evictions},
      {"disk_cache_fills", s.disk_cache_fills},
      {"disk_cache_dropped", s.disk_cache_dropped},
      {"disk_cache_fills_skipped", s.disk_cache_fills_skipped},
      {"put_blocks_helped", s.put_blocks_helped},
      {"uploads_parked", s.uploads_parked},
      {"uploads_parked_bytes", s.uploads_parked_bytes},
      {"l2_journal_syncs", s.l2_journal_syncs},
      {"l2_journal_records_synced", s.l2_journal_records_synced},
      {"l2_journal_sync_micros", s.l2_journal_sync_micros},
      {"l2_journal_preallocations", s.l2_journal_preallocations},
      {"l2_journal_preallocate_micros", s.l2_journal_preallocate_micros},
  };
  if (ctx.out.json()) {
    nlohmann::json stats = nlohmann::json::object();
    for (const auto& [name, value] : fields) stats[name] = value;
    nlohmann::json doc = {{"l2", store->DescribeL2()}, {"stats", stats}};
    if (ctx.remote()) {
      doc["daemon"] = ctx.RemoteName();
    } else {
      doc["data_dir"] = ctx.opts.data_dir;
    }
    ctx.out.Json(doc);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      ctx.remote() ? std::vector<std::string>{"daemon", ctx.RemoteName()}
                   : std::vector<std::string>{"data_dir", ctx.opts.data_dir},
      {"l2", store->DescribeL2()}};
  for (const auto& [name, value] : fields) rows.push_back({name, std::to_string(value)});
  ctx.out.Table({"STAT", "VALUE"}, rows);
  ctx.out.Note(ctx.remote() ? "counters are the daemon's since it started"
                             : "counters are for this process since it opened the store; l0_* "
                               "and cache_* describe what it loaded");
  return kExitOk;
}

int RunRefresh(Context& ctx) {
  int code = 0;
  Store* store = ctx.OpenStore(&code);
  if (!store) return code;
  auto report = store->Refresh();
  if (!report.ok()) return Fail(ctx, "refresh", report.status());
  if (ctx.out.json()) {
    ctx.out.Json({{"heads_listed", report->heads_listed},
                  {"chains_added", report->chains_added},
                  {"chains_updated", report->chains_updated},
                  {"chains_removed", report->chains_removed}});
  } else {
    ctx.out.Line("listed " + std::to_string(report->heads_listed) + " heads: " +
                 std::to_string(report->chains_added) + " added, " +
                 std::to_string(report->chains_updated) + " updated, " +
                 std::to_string(report->chains_removed) + " removed");
  }
  return kExitOk;
}

}  // namespace

void AddAdminCommands(CLI::App& root, CommandTable& table) {
  CLI::App* stat = root.add_subcommand(
      "stat", "Show store statistics per plane (L0 index, RAM cache, operations, L2)");
  stat->footer(HelpFooter({
      "wombatkv stat",
      "wombatkv --json stat | python3 -m json.tool",
      "Takes no arguments. Shows the data directory and where L2 lives too.",
  }));
  table.Add(stat, RunStat);

  CLI::App* refresh = root.add_subcommand(
      "refresh", "Reload from L2 the chains other processes or hosts published or removed");
  refresh->footer(HelpFooter({
      "wombatkv refresh",
      "wombatkv --json refresh        # {\"heads_listed\":..,\"chains_added\":..,...}",
      "Takes no arguments. Opening the store already reconciles with L2; refresh reports",
      "what changed since then.",
  }));
  table.Add(refresh, RunRefresh);
}

}  // namespace wombatkv::cli
