// stat, refresh: the store as a whole.
#include <memory>

#include "store/stats_fields.h"
#include "tools/wombatkv/commands.h"
#include "tools/wombatkv/exit_codes.h"

namespace wombatkv::cli {
namespace {

int RunStat(Context& ctx) {
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  auto stats = store->TryStats();
  if (!stats.ok()) return Fail(ctx, "stat", stats.status());
  const StoreStats& s = *stats;
  // One table (kStoreStatsFields) drives both renderings: every counter, in StoreStats' order.
  if (ctx.out.json()) {
    nlohmann::json stats = nlohmann::json::object();
    for (const StoreStatsField& f : kStoreStatsFields) stats[f.name] = s.*f.member;
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
  for (const StoreStatsField& f : kStoreStatsFields)
    rows.push_back({f.name, std::to_string(s.*f.member)});
  ctx.out.Table({"STAT", "VALUE"}, rows);
  ctx.out.Note(ctx.remote() ? "counters are the daemon's since it started"
                            : "counters are for this process since it opened the store; l0_* "
                              "describe the index it loaded, cache_* its RAM cache (empty at "
                              "open: a running daemon's stat shows a warm one)");
  return kExitOk;
}

int RunRefresh(Context& ctx) {
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
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
