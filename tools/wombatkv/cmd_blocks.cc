// put, put-chain, lookup, get, cat: blocks in and out of the store.
#include <algorithm>
#include <filesystem>
#include <memory>

#include "base/blake3_hash.h"
#include "base/limits.h"
#include "tools/wombatkv/commands.h"
#include "tools/wombatkv/exit_codes.h"
#include "wombatkv/env.h"

namespace wombatkv::cli {
namespace {

// ---- put ------------------------------------------------------------------------------------

struct PutArgs {
  std::string key;
  std::string parent;
  PayloadSource payload;
  bool publish = false;
};

int RunPut(Context& ctx, const PutArgs& a) {
  auto key = ParseKey("KEY_HEX", a.key);
  if (!key.ok()) return Fail(ctx, "put", key.status(), "a block key is 64 hex digits");
  BlockKey parent;
  if (!a.parent.empty()) {
    auto p = ParseKey("--parent", a.parent);
    if (!p.ok()) return Fail(ctx, "put", p.status(), "a block key is 64 hex digits");
    parent = *p;
  }
  auto payload = ReadPayload(a.payload, limits::kBlockBytesMax);
  if (!payload.ok()) return Fail(ctx, "put", payload.status(), "see `wombatkv put --help`");

  int code = 0;
  Store* store = ctx.OpenStore(&code);
  if (!store) return code;
  BlockPut block{*key, parent, (*payload)->view()};
  auto hashes = store->PutBlocks(ctx.opts.ns, ctx.fp, {&block, 1});
  if (!hashes.ok()) return Fail(ctx, "put " + key->ToHex(), hashes.status());
  const std::string hash = hashes->at(0).ToHex();
  std::optional<uint64_t> version;
  if (a.publish) {
    auto v = store->PublishChain(ctx.opts.ns, ctx.fp, *key, *key);
    // The store's error says what to put first when an ancestor is missing.
    if (!v.ok()) return Fail(ctx, "put --publish " + key->ToHex(), v.status());
    version = *v;
  }
  if (ctx.out.json()) {
    nlohmann::json doc = {{"key", key->ToHex()},
                          {"parent", parent.ToHex()},
                          {"content_hash", hash},
                          {"bytes", (*payload)->size()},
                          {"namespace", ctx.opts.ns},
                          {"fingerprint", ctx.fp.ToHex()}};
    if (version) doc["version"] = *version;
    ctx.out.Json(doc);
  } else {
    ctx.out.Line(hash);
    if (version) {
      ctx.out.Note("stored " + Counted((*payload)->size(), "byte") + " and published chain " +
                   key->ToHex() + " version " + std::to_string(*version));
    } else {
      // A key already in a published chain answers lookups and gets with that chain's block.
      const std::vector<BlockKey> keys{*key};
      auto found = store->LookupPrefix(ctx.opts.ns, ctx.fp, keys);
      const bool published = found.ok() && *found == 1;
      ctx.out.Note("stored " + Counted((*payload)->size(), "byte") +
                   (published ? "; the key is in a published chain already: lookups and gets "
                                "see that chain's block until a chain reaching this put is "
                                "published (wombatkv publish)"
                              : "; invisible to lookups until a chain reaching it is published "
                                "(wombatkv publish, or put --publish)"));
    }
  }
  return kExitOk;
}

// ---- put-chain ------------------------------------------------------------------------------

struct PutChainArgs {
  std::vector<std::string> files;
  std::string dir;
  std::string parent;
  std::string chain_id;
  uint64_t expect_version = 0;
  CLI::Option* expect_opt = nullptr;
};

// The key of a block that put-chain stores: it names the whole prefix (parent key) and the
// block's bytes, so re-putting the same files yields the same keys.
BlockKey DeriveKey(const BlockKey& parent, const ContentHash& hash) {
  static constexpr std::string_view kDomain = "wombatkv.put-chain.v1\n";
  Blake3Hasher h;
  h.Update(AsBytes(kDomain));
  h.Update(parent.bytes);
  h.Update(hash.bytes);
  BlockKey key;
  h.Finalize(key.bytes);
  return key;
}

// File names in the order people number them: runs of digits compare as numbers ("b2" before
// "b10"; "b02" and "b2" by their text), everything else byte by byte.
bool NaturalLess(std::string_view a, std::string_view b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      const size_t xz = std::min(x.find_first_not_of('0'), x.size());
      const size_t yz = std::min(y.find_first_not_of('0'), y.size());
      std::string_view xv = x.substr(xz), yv = y.substr(yz);
      if (xv.size() != yv.size()) return xv.size() < yv.size();
      if (xv != yv) return xv < yv;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if ((i < a.size()) != (j < b.size())) return j < b.size();
  return a < b;  // equal but for leading zeros: a total order all the same
}

Result<std::vector<std::string>> ListDirFiles(const std::string& dir) {
  FileSystem* fs = PosixFileSystem();
  auto names = fs->ListDir(dir);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return Status::InvalidArgument("no such directory: " + dir);
    return names.status().WithContext(dir);
  }
  std::sort(names->begin(), names->end(), NaturalLess);
  std::vector<std::string> files;
  for (const auto& name : *names) {
    std::string path = dir + "/" + name;
    // Regular files only (docs/cli.md): a FIFO or a device would block or never end.
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) files.push_back(path);
  }
  if (files.empty()) return Status::InvalidArgument("directory " + dir + " has no files");
  return files;
}

int RunPutChain(Context& ctx, const PutChainArgs& a) {
  const std::string what = "put-chain";
  if (a.files.empty() == a.dir.empty()) {
    return ctx.out.Usage(what, "give the blocks with either --file PATH... or --dir DIR",
                         "see `wombatkv put-chain --help`");
  }
  BlockKey parent;
  if (!a.parent.empty()) {
    auto p = ParseKey("--parent", a.parent);
    if (!p.ok()) return Fail(ctx, what, p.status(), "a block key is 64 hex digits");
    parent = *p;
  }
  std::optional<BlockKey> chain_id;
  if (!a.chain_id.empty()) {
    auto c = ParseKey("--chain-id", a.chain_id);
    if (!c.ok()) return Fail(ctx, what, c.status(), "a chain id is 64 hex digits");
    chain_id = *c;
  }
  std::vector<std::string> files = a.files;
  if (!a.dir.empty()) {
    auto listed = ListDirFiles(a.dir);
    if (!listed.ok()) return Fail(ctx, what, listed.status(), "pass a directory of block files");
    files = std::move(listed).value();
  }
  if (files.size() > limits::kBatchBlocksMax) {
    return ctx.out.Usage(what, std::to_string(files.size()) + " files are more than " +
                                   std::to_string(limits::kBatchBlocksMax) + " blocks",
                         "split them into several chains with --parent");
  }

  std::vector<std::shared_ptr<Buffer>> payloads;
  std::vector<BlockPut> puts;
  BlockKey prev = parent;
  for (const auto& path : files) {
    auto data = ReadWholeFile(path, limits::kBlockBytesMax);
    if (!data.ok()) return Fail(ctx, what, data.status(), "each file is one block");
    BlockKey key = DeriveKey(prev, HashPayload((*data)->view()));
    puts.push_back({key, prev, (*data)->view()});
    payloads.push_back(std::move(data).value());
    prev = key;
  }
  const BlockKey tip = prev;
  const BlockKey id = chain_id.value_or(tip);

  int code = 0;
  Store* store = ctx.OpenStore(&code);
  if (!store) return code;
  auto hashes = store->PutBlocks(ctx.opts.ns, ctx.fp, puts);
  if (!hashes.ok()) return Fail(ctx, what, hashes.status());
  std::optional<uint64_t> expected;
  if (a.expect_opt->count() > 0) expected = a.expect_version;
  ChainState current;
  auto version = store->PublishChain(ctx.opts.ns, ctx.fp, id, tip, expected, &current);
  if (!version.ok()) {
    if (version.status().IsConflict()) {
      return ctx.out.Error(
          what + ": publish " + id.ToHex(), version.status(), CasConflictHint(current),
          {{"current", {{"tip", current.tip.ToHex()}, {"version", current.version}}}});
    }
    return Fail(ctx, what + ": publish " + id.ToHex(), version.status());
  }

  uint64_t total = 0;
  nlohmann::json blocks = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < puts.size(); ++i) {
    total += puts[i].payload.size();
    blocks.push_back({{"key", puts[i].key.ToHex()},
                      {"parent", puts[i].parent.ToHex()},
                      {"content_hash", (*hashes)[i].ToHex()},
                      {"bytes", puts[i].payload.size()},
                      {"file", files[i]}});
    rows.push_back({std::to_string(i), puts[i].key.ToHex(), (*hashes)[i].ToHex(),
                    std::to_string(puts[i].payload.size()), files[i]});
  }
  if (ctx.out.json()) {
    ctx.out.Json({{"namespace", ctx.opts.ns},
                  {"fingerprint", ctx.fp.ToHex()},
                  {"chain_id", id.ToHex()},
                  {"tip", tip.ToHex()},
                  {"version", *version},
                  {"bytes", total},
                  {"blocks", blocks}});
  } else {
    ctx.out.Table({"#", "KEY", "CONTENT_HASH", "BYTES", "FILE"}, rows);
    ctx.out.Line("published chain " + id.ToHex() + " version " + std::to_string(*version) + " (" +
                 Counted(puts.size(), "block") + ", " + HumanBytes(total) + ")");
  }
  return kExitOk;
}

// ---- lookup ---------------------------------------------------------------------------------

struct KeysArgs {
  std::vector<std::string> keys;
  std::string out_dir;
};

int RunLookup(Context& ctx, const KeysArgs& a) {
  auto keys = ParseKeys("KEY_HEX", a.keys);
  if (!keys.ok()) return Fail(ctx, "lookup", keys.status(), "a block key is 64 hex digits");
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  auto matched = store->LookupPrefix(ctx.opts.ns, ctx.fp, *keys);
  if (!matched.ok()) return Fail(ctx, "lookup", matched.status());
  if (ctx.out.json()) {
    ctx.out.Json({{"keys", keys->size()}, {"matched", *matched}});
  } else {
    ctx.out.Line(std::to_string(*matched));
    ctx.out.Note(std::to_string(*matched) + " of " + std::to_string(keys->size()) +
                 " leading keys are in published chains");
  }
  return kExitOk;
}

// ---- get ------------------------------------------------------------------------------------

int RunGet(Context& ctx, const KeysArgs& a) {
  auto keys = ParseKeys("KEY_HEX", a.keys);
  if (!keys.ok()) return Fail(ctx, "get", keys.status(), "a block key is 64 hex digits");
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  auto borrow = store->GetBlocks(ctx.opts.ns, ctx.fp, *keys);
  if (!borrow.ok()) {
    std::string hint;
    if (borrow.status().IsNotFound()) {
      hint = "get is all or nothing; `wombatkv lookup KEY_HEX...` counts the leading keys present";
    }
    return Fail(ctx, "get", borrow.status(), hint);
  }
  if (!a.out_dir.empty()) {
    if (Status s = PosixFileSystem()->CreateDirs(a.out_dir); !s.ok()) {
      return Fail(ctx, "get --out " + a.out_dir, OutputPathError(s), "pass a writable directory");
    }
  }
  nlohmann::json blocks = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < borrow->size(); ++i) {
    ByteView bytes = borrow->payload(i);
    const std::string key = (*keys)[i].ToHex();
    nlohmann::json b = {{"key", key},
                        {"bytes", bytes.size()},
                        {"content_hash", HashPayload(bytes).ToHex()}};
    std::vector<std::string> row = {std::to_string(i), key, std::to_string(bytes.size()),
                                    b["content_hash"].get<std::string>()};
    if (!a.out_dir.empty()) {
      std::string path = a.out_dir + "/" + key + ".bin";
      if (Status s = WriteWholeFile(path, bytes); !s.ok()) {
        return Fail(ctx, "get: write " + path, OutputPathError(s), "check the --out directory");
      }
      b["path"] = path;
      row.push_back(path);
    }
    blocks.push_back(std::move(b));
    rows.push_back(std::move(row));
  }
  if (ctx.out.json()) {
    ctx.out.Json({{"blocks", blocks}, {"total_bytes", borrow->total_bytes()}});
  } else {
    std::vector<std::string> header = {"#", "KEY", "BYTES", "CONTENT_HASH"};
    if (!a.out_dir.empty()) header.push_back("PATH");
    ctx.out.Table(header, rows);
  }
  return kExitOk;
}

// ---- cat ------------------------------------------------------------------------------------

struct CatArgs {
  std::string hash;
};

int RunCat(Context& ctx, const CatArgs& a) {
  auto hash = ParseContentHash("CONTENT_HASH_HEX", a.hash);
  if (!hash.ok()) return Fail(ctx, "cat", hash.status(), "a content hash is 40 hex digits");
  int code = 0;
  Store* store = ctx.OpenStore(&code, Context::DataDir::kMustExist);
  if (!store) return code;
  auto data = store->GetByContentHash(ctx.opts.ns, *hash);
  if (!data.ok()) {
    std::string hint;
    if (data.status().IsNotFound()) {
      hint = "check the hash and --namespace (`wombatkv put` and `wombatkv inspect` print hashes)";
    }
    return Fail(ctx, "cat " + a.hash, data.status(), hint);
  }
  if (ctx.out.json()) {
    ctx.out.Json({{"content_hash", hash->ToHex()},
                  {"bytes", data->size},
                  {"base64", Base64(data->view())}});
    return kExitOk;
  }
  if (Status s = ctx.out.Raw(data->view()); !s.ok()) return Fail(ctx, "cat", s, "check stdout");
  return kExitOk;
}

}  // namespace

void AddBlockCommands(CLI::App& root, CommandTable& table) {
  {
    auto a = std::make_shared<PutArgs>();
    CLI::App* sub = root.add_subcommand(
        "put", "Store one block; prints its content hash (BLAKE3-20, 40 hex digits)");
    sub->add_option("KEY_HEX", a->key, "Block key: 64 hex digits")->required();
    sub->add_option("--parent", a->parent, "Parent block key, 64 hex digits (default: a root)")
        ->type_name("HEX");
    AddPayloadOptions(sub, &a->payload, "payload");
    sub->add_flag("--publish", a->publish,
                  "Also publish the chain ending at this block (chain id = KEY_HEX); its "
                  "ancestors must already be stored: put, or in a published chain");
    sub->footer(HelpFooter({
        "K1=$(printf '1%.0s' $(seq 64)); K2=$(printf '2%.0s' $(seq 64))   # 64-hex-digit keys",
        "wombatkv put $K1 --value 'hello' --publish               # a root, published",
        "wombatkv put $K2 --parent $K1 --file kv.bin --publish    # extends the chain",
        "head -c 4096 /dev/urandom | wombatkv put $K2 --parent $K1 --stdin",
        "wombatkv publish $K2 $K2                                 # later: publish it",
        "Without --publish the block stays invisible to lookups (but readable by its hash with",
        "`cat`) until a chain reaching it is published.",
    }));
    table.Add(sub, [a](Context& ctx) { return RunPut(ctx, *a); });
  }
  {
    auto a = std::make_shared<PutChainArgs>();
    CLI::App* sub = root.add_subcommand(
        "put-chain", "Store files as one chain (one block per file, in order) and publish it");
    auto* files = sub->add_option("--file", a->files,
                                  "Block files, root first (a pipe is read to its end; - is "
                                  "standard input)")
                      ->type_name("PATH");
    sub->add_option("--dir", a->dir,
                    "Every regular file of DIR, root first, by name with numbers compared as "
                    "numbers (b2 before b10)")
        ->type_name("DIR")
        ->excludes(files);
    sub->add_option("--parent", a->parent,
                    "Key the first block hangs off (64 hex; default: a new root)")
        ->type_name("HEX");
    sub->add_option("--chain-id", a->chain_id, "Chain id (64 hex; default: the tip key)")
        ->type_name("HEX");
    a->expect_opt = sub->add_option("--expect-version", a->expect_version,
                                    "Publish only if the chain is at version N (0: new chain)")
                        ->type_name("N")
                        ->check(WholeNumber());
    sub->footer(HelpFooter({
        "wombatkv put-chain --file b0.bin b1.bin b2.bin",
        "wombatkv put-chain --dir ./blocks --json",
        "Keys are derived: key = BLAKE3(\"wombatkv.put-chain.v1\\n\" || parent key || content",
        "hash), so the same files always give the same keys. Prints one row per block and the",
        "published chain id (the tip key unless --chain-id) and version.",
    }));
    table.Add(sub, [a](Context& ctx) { return RunPutChain(ctx, *a); });
  }
  {
    auto a = std::make_shared<KeysArgs>();
    CLI::App* sub = root.add_subcommand(
        "lookup", "Count the leading keys present in published chains (RAM index only, no I/O)");
    sub->add_option("KEY_HEX", a->keys, "Block keys, root first: 64 hex digits each")
        ->required();
    sub->footer(HelpFooter({
        "wombatkv lookup $K1 $K2 $K3                # prints e.g. 2 (keys: 64 hex digits)",
        "wombatkv --json lookup $K1                 # {\"keys\":1,\"matched\":1}",
        "Exits 0 whatever the count; use `get` for an all-or-nothing check.",
    }));
    table.Add(sub, [a](Context& ctx) { return RunLookup(ctx, *a); });
  }
  {
    auto a = std::make_shared<KeysArgs>();
    CLI::App* sub = root.add_subcommand(
        "get", "Fetch the payloads of keys, all or nothing (exit 1 if any key is missing)");
    sub->add_option("KEY_HEX", a->keys,
                    "Consecutive blocks of a chain, root to tip, from any block: 64 hex digits "
                    "each")
        ->required();
    sub->add_option("--out", a->out_dir, "Write each payload to DIR/<KEY_HEX>.bin")
        ->type_name("DIR");
    sub->footer(HelpFooter({
        "wombatkv get $K1 $K2                       # one row per block: key, bytes, hash",
        "wombatkv get $K2                           # the chain's second block alone",
        "wombatkv get $K1 $K2 --out ./restored       # writes ./restored/<KEY_HEX>.bin",
        "Bytes read back from L2 are verified against their content hash (exit 4 if not).",
    }));
    table.Add(sub, [a](Context& ctx) { return RunGet(ctx, *a); });
  }
  {
    auto a = std::make_shared<CatArgs>();
    CLI::App* sub = root.add_subcommand(
        "cat", "Write a payload's raw bytes to stdout, by content hash (orphans too)");
    sub->add_option("CONTENT_HASH_HEX", a->hash, "Content hash: 40 hex digits")->required();
    sub->footer(HelpFooter({
        "H=$(wombatkv put $K1 --value hello)        # put prints the content hash",
        "wombatkv cat $H > block.bin",
        "wombatkv --json cat $H     # {\"content_hash\":..,\"bytes\":..,\"base64\":..}",
        "Blocks that were put but never published (orphans) are readable here too.",
    }));
    table.Add(sub, [a](Context& ctx) { return RunCat(ctx, *a); });
  }
}

}  // namespace wombatkv::cli
