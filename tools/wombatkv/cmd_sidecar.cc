// sidecar put|get: auxiliary bytes keyed by a chain tip (e.g. an engine's partial last block).
#include <memory>

#include "base/limits.h"
#include "tools/wombatkv/commands.h"
#include "tools/wombatkv/exit_codes.h"

namespace wombatkv::cli {
namespace {

struct SidecarPutArgs {
  std::string tip;
  PayloadSource payload;
};

int RunSidecarPut(Context& ctx, const SidecarPutArgs& a) {
  auto tip = ParseKey("TIP_HEX", a.tip);
  if (!tip.ok()) return Fail(ctx, "sidecar put", tip.status(), "a tip is 64 hex digits");
  auto payload = ReadPayload(a.payload, limits::kSidecarBytesMax);
  if (!payload.ok()) {
    return Fail(ctx, "sidecar put", payload.status(), "see `wombatkv sidecar put --help`");
  }
  int code = 0;
  Store* store = ctx.OpenStore(&code);
  if (!store) return code;
  if (Status s = store->PutSidecar(ctx.opts.ns, ctx.fp, *tip, (*payload)->view()); !s.ok()) {
    return Fail(ctx, "sidecar put " + tip->ToHex(), s);
  }
  if (ctx.out.json()) {
    ctx.out.Json({{"tip", tip->ToHex()}, {"bytes", (*payload)->size()}});
  } else {
    ctx.out.Note("stored a sidecar of " + Counted((*payload)->size(), "byte") + " for tip " +
                 tip->ToHex());
  }
  return kExitOk;
}

struct SidecarGetArgs {
  std::string tip;
  std::string out_path;
};

int RunSidecarGet(Context& ctx, const SidecarGetArgs& a) {
  auto tip = ParseKey("TIP_HEX", a.tip);
  if (!tip.ok()) return Fail(ctx, "sidecar get", tip.status(), "a tip is 64 hex digits");
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  auto data = store->GetSidecar(ctx.opts.ns, ctx.fp, *tip);
  if (!data.ok()) {
    std::string hint;
    if (data.status().IsNotFound()) {
      hint = "no sidecar for this tip (a chain may be published without one: recompute it)";
    }
    return Fail(ctx, "sidecar get " + tip->ToHex(), data.status(), hint);
  }
  if (!a.out_path.empty()) {
    if (Status s = WriteWholeFile(a.out_path, data->view()); !s.ok()) {
      return Fail(ctx, "sidecar get: write " + a.out_path, OutputPathError(s),
                  "check the --out path");
    }
  }
  if (ctx.out.json()) {
    nlohmann::json doc = {{"tip", tip->ToHex()}, {"bytes", data->size}};
    if (a.out_path.empty()) {
      doc["base64"] = Base64(data->view());
    } else {
      doc["path"] = a.out_path;
    }
    ctx.out.Json(doc);
    return kExitOk;
  }
  if (a.out_path.empty()) {
    if (Status s = ctx.out.Raw(data->view()); !s.ok()) {
      return Fail(ctx, "sidecar get", s, "check stdout");
    }
  } else {
    ctx.out.Note("wrote " + Counted(data->size, "byte") + " to " + a.out_path);
  }
  return kExitOk;
}

}  // namespace

void AddSidecarCommands(CLI::App& root, CommandTable& table) {
  CLI::App* group = root.add_subcommand(
      "sidecar", "Auxiliary bytes attached to a chain tip: `sidecar put` / `sidecar get`");
  group->require_subcommand(1);
  group->footer(HelpFooter({
      "wombatkv sidecar put $TIP --file tail.bin",
      "wombatkv sidecar get $TIP > tail.bin",
      "A sidecar is written separately from the chain head: a published chain may have none",
      "(sidecar get then exits 1 and the engine recomputes).",
  }));
  {
    auto a = std::make_shared<SidecarPutArgs>();
    CLI::App* sub = group->add_subcommand("put", "Store the sidecar of TIP (durable on return)");
    sub->add_option("TIP_HEX", a->tip, "Chain tip key: 64 hex digits")->required();
    AddPayloadOptions(sub, &a->payload, "sidecar bytes");
    sub->footer(HelpFooter({
        "wombatkv sidecar put $TIP --file tail.bin",
        "wombatkv sidecar put $TIP --value 'partial tokens'",
        "printf 'abc' | wombatkv sidecar put $TIP --stdin",
    }));
    table.Add(sub, [a](Context& ctx) { return RunSidecarPut(ctx, *a); });
  }
  {
    auto a = std::make_shared<SidecarGetArgs>();
    CLI::App* sub = group->add_subcommand(
        "get", "Write the sidecar of TIP to stdout (raw bytes); exit 1 if there is none");
    sub->add_option("TIP_HEX", a->tip, "Chain tip key: 64 hex digits")->required();
    sub->add_option("--out", a->out_path, "Write the bytes to PATH instead of stdout")
        ->type_name("PATH");
    sub->footer(HelpFooter({
        "wombatkv sidecar get $TIP > tail.bin",
        "wombatkv sidecar get $TIP --out tail.bin",
        "wombatkv --json sidecar get $TIP           # {\"tip\":..,\"bytes\":..,\"base64\":..}",
    }));
    table.Add(sub, [a](Context& ctx) { return RunSidecarGet(ctx, *a); });
  }
}

}  // namespace wombatkv::cli
