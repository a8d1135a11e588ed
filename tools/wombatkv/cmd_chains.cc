// publish, ls, inspect: chain heads.
#include <memory>

#include "tools/wombatkv/commands.h"
#include "tools/wombatkv/exit_codes.h"

namespace wombatkv::cli {
namespace {

// ---- publish --------------------------------------------------------------------------------

struct PublishArgs {
  std::string chain_id;
  std::string tip;
  uint64_t expect_version = 0;
  CLI::Option* expect_opt = nullptr;
};

int RunPublish(Context& ctx, const PublishArgs& a) {
  auto id = ParseKey("CHAIN_ID_HEX", a.chain_id);
  if (!id.ok()) return Fail(ctx, "publish", id.status(), "a chain id is 64 hex digits");
  auto tip = ParseKey("TIP_HEX", a.tip);
  if (!tip.ok()) return Fail(ctx, "publish", tip.status(), "a tip is a block key: 64 hex digits");
  std::optional<uint64_t> expected;
  if (a.expect_opt->count() > 0) expected = a.expect_version;

  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  ChainState current;
  auto version = store->PublishChain(ctx.opts.ns, ctx.fp, *id, *tip, expected, &current);
  const std::string what = "publish " + id->ToHex();
  if (!version.ok()) {
    const Status& s = version.status();
    if (s.IsConflict()) {
      return ctx.out.Error(what, s, CasConflictHint(current),
                           {{"current",
                             {{"tip", current.tip.ToHex()},
                              {"version", current.version},
                              {"length", current.length}}}});
    }
    std::string hint;
    if (s.code() == Code::kFailedPrecondition) {
      hint = "put every block of the chain first (wombatkv put), or use wombatkv put-chain";
    }
    return Fail(ctx, what, s, hint);
  }
  if (ctx.out.json()) {
    ctx.out.Json({{"namespace", ctx.opts.ns},
                  {"fingerprint", ctx.fp.ToHex()},
                  {"chain_id", id->ToHex()},
                  {"tip", tip->ToHex()},
                  {"version", *version}});
  } else {
    ctx.out.Line(std::to_string(*version));
    ctx.out.Note("published chain " + id->ToHex() + " at tip " + tip->ToHex() + ", version " +
                 std::to_string(*version));
  }
  return kExitOk;
}

// ---- ls -------------------------------------------------------------------------------------

struct LsArgs {
  std::string ns;
  CLI::Option* ns_opt = nullptr;
};

int RunLs(Context& ctx, const LsArgs& a) {
  std::string ns;  // empty = every namespace
  if (a.ns_opt->count() > 0) {
    ns = a.ns;
  } else if (ctx.ns_given) {
    ns = ctx.opts.ns;
  }
  if (!ns.empty()) {
    if (Status s = ValidateNamespace(ns); !s.ok()) {
      return Fail(ctx, "ls --namespace", s, kNamespaceHint);
    }
  }
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  auto chains = store->ListChains(ns);
  if (!chains.ok()) return Fail(ctx, "ls", chains.status());
  nlohmann::json list = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (const ChainState& c : *chains) {
    uint64_t bytes = 0;
    uint32_t blocks = c.length;
    // The chain may be replaced or removed between the two calls (another process, refresh):
    // show what the head said rather than fail the listing.
    auto detail = store->GetChain(c.ns, c.fp, c.chain_id);
    if (detail.ok()) {
      blocks = static_cast<uint32_t>(detail->size());
      for (const ChainBlock& b : *detail) bytes += b.length;
    }
    list.push_back({{"namespace", c.ns},
                    {"fingerprint", c.fp.ToHex()},
                    {"chain_id", c.chain_id.ToHex()},
                    {"tip", c.tip.ToHex()},
                    {"version", c.version},
                    {"blocks", blocks},
                    {"bytes", bytes}});
    rows.push_back({c.ns, c.fp.ToHex(), c.chain_id.ToHex(), c.tip.ToHex(),
                    std::to_string(c.version), std::to_string(blocks), std::to_string(bytes)});
  }
  if (ctx.out.json()) {
    ctx.out.Json({{"chains", list}});
    return kExitOk;
  }
  if (chains->empty()) {
    ctx.out.Note(ns.empty() ? "no published chains" : "no published chains in namespace " + ns);
    return kExitOk;
  }
  ctx.out.Table({"NAMESPACE", "FINGERPRINT", "CHAIN_ID", "TIP", "VERSION", "BLOCKS", "BYTES"},
                rows);
  return kExitOk;
}

// ---- inspect --------------------------------------------------------------------------------

struct InspectArgs {
  std::string chain_id;
};

int RunInspect(Context& ctx, const InspectArgs& a) {
  auto id = ParseKey("CHAIN_ID_HEX", a.chain_id);
  if (!id.ok()) return Fail(ctx, "inspect", id.status(), "a chain id is 64 hex digits");
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  const std::string what = "inspect " + id->ToHex();
  std::optional<ChainState> state;
  std::vector<std::string> other_fps;
  auto chains = store->ListChains(ctx.opts.ns);
  if (!chains.ok()) return Fail(ctx, what, chains.status());
  for (ChainState& c : *chains) {
    if (c.chain_id != *id) continue;
    if (c.fp == ctx.fp) {
      state = c;
    } else {
      other_fps.push_back(c.fp.ToHex());
    }
  }
  auto blocks = store->GetChain(ctx.opts.ns, ctx.fp, *id);
  if (!blocks.ok()) {
    std::string hint;
    if (blocks.status().IsNotFound() && !other_fps.empty()) {
      hint = "the chain exists under fingerprint " + other_fps.front() + ": pass --fingerprint " +
             other_fps.front();
    } else if (blocks.status().IsNotFound()) {
      hint = "`wombatkv ls` lists published chains with their namespace and fingerprint";
    }
    return Fail(ctx, what, blocks.status(), hint);
  }
  uint64_t total = 0;
  nlohmann::json list = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < blocks->size(); ++i) {
    const ChainBlock& b = (*blocks)[i];
    total += b.length;
    list.push_back({{"index", i},
                    {"key", b.key.ToHex()},
                    {"content_hash", b.hash.ToHex()},
                    {"bytes", b.length}});
    rows.push_back({std::to_string(i), b.key.ToHex(), b.hash.ToHex(), std::to_string(b.length)});
  }
  const std::string tip = state ? state->tip.ToHex()
                                : (blocks->empty() ? std::string() : blocks->back().key.ToHex());
  const uint64_t version = state ? state->version : 0;
  if (ctx.out.json()) {
    ctx.out.Json({{"namespace", ctx.opts.ns},
                  {"fingerprint", ctx.fp.ToHex()},
                  {"chain_id", id->ToHex()},
                  {"tip", tip},
                  {"version", version},
                  {"bytes", total},
                  {"blocks", list}});
    return kExitOk;
  }
  if (!ctx.out.quiet()) {
    ctx.out.Line("chain        " + id->ToHex());
    ctx.out.Line("namespace    " + ctx.opts.ns);
    ctx.out.Line("fingerprint  " + ctx.fp.ToHex());
    ctx.out.Line("tip          " + tip);
    ctx.out.Line("version      " + std::to_string(version));
    ctx.out.Line("blocks       " + std::to_string(blocks->size()) + " (" + HumanBytes(total) +
                 ", root first)");
  }
  ctx.out.Table({"#", "KEY", "CONTENT_HASH", "BYTES"}, rows);
  return kExitOk;
}

}  // namespace

void AddChainCommands(CLI::App& root, CommandTable& table) {
  {
    auto a = std::make_shared<PublishArgs>();
    CLI::App* sub = root.add_subcommand(
        "publish", "Publish a chain head: makes the chain ending at TIP visible to lookups");
    sub->add_option("CHAIN_ID_HEX", a->chain_id, "Chain id: 64 hex digits (often the tip key)")
        ->required();
    sub->add_option("TIP_HEX", a->tip, "Tip block key: 64 hex digits (its blocks must be put)")
        ->required();
    a->expect_opt =
        sub->add_option("--expect-version", a->expect_version,
                        "Compare-and-swap: publish only if the chain is at version N (0: the "
                        "chain must not exist yet); exit 3 with the current tip/version if not")
            ->type_name("N")
            ->check(WholeNumber());
    sub->footer(HelpFooter({
        "wombatkv publish $TIP $TIP                      # prints the new version, e.g. 1",
        "wombatkv publish $CHAIN $TIP2 --expect-version 1",
        "Without --expect-version the last writer wins. $TIP etc. are 64-hex-digit keys.",
    }));
    table.Add(sub, [a](Context& ctx) { return RunPublish(ctx, *a); });
  }
  {
    auto a = std::make_shared<LsArgs>();
    CLI::App* sub = root.add_subcommand(
        "ls", "List published chains: namespace, fingerprint, chain id, tip, version, blocks, "
              "bytes");
    a->ns_opt = sub->add_option("-n,--namespace", a->ns,
                                "Only this namespace (default: every namespace)")
                    ->type_name("NS");
    sub->footer(HelpFooter({
        "wombatkv ls",
        "wombatkv ls --namespace team-a --json",
        "Lists every fingerprint; every namespace unless --namespace is given (here or before",
        "the command).",
    }));
    table.Add(sub, [a](Context& ctx) { return RunLs(ctx, *a); });
  }
  {
    auto a = std::make_shared<InspectArgs>();
    CLI::App* sub = root.add_subcommand(
        "inspect", "Show a published chain's blocks, root to tip, with content hashes and sizes");
    sub->add_option("CHAIN_ID_HEX", a->chain_id, "Chain id: 64 hex digits")->required();
    sub->footer(HelpFooter({
        "wombatkv inspect $CHAIN",
        "wombatkv --fingerprint 0123456789abcdef01234567 --json inspect $CHAIN",
        "The chain is looked up in --namespace / --fingerprint (see `wombatkv ls`).",
    }));
    table.Add(sub, [a](Context& ctx) { return RunInspect(ctx, *a); });
  }
}

}  // namespace wombatkv::cli
