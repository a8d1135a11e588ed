#include "tools/workload/report.h"

#include <string_view>

#include "tools/wombatkv/output.h"

namespace wombatkv::workload {
namespace {

double Percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// MiB per second of `bytes` moved in `micros` (0 if no time was measured).
double MibPerSec(uint64_t bytes, uint64_t micros) {
  if (micros == 0) return 0.0;
  return static_cast<double>(bytes) / (1 << 20) / (static_cast<double>(micros) / 1e6);
}

// "63 MiB/s", "4.8 GiB/s" (RAM-cache hits are zero-copy borrows: restores can be very fast).
std::string Rate(uint64_t bytes, uint64_t micros) {
  const double mib = MibPerSec(bytes, micros);
  char buf[32];
  if (mib >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB/s", mib / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB/s", mib);
  }
  return buf;
}

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string TurnBlocksText(const Shape& s) {
  if (s.fixed_turn_blocks || s.turn_blocks == 0) return std::to_string(s.turn_blocks);
  return "1-" + std::to_string(2 * s.turn_blocks);
}

// Display width of UTF-8 text (code points; "µ" is two bytes, one column).
size_t Columns(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string PadLeft(const std::string& text, size_t width) {
  size_t w = Columns(text);
  return (w < width ? std::string(width - w, ' ') : std::string()) + text;
}

std::string PadRight(const std::string& text, size_t width) {
  size_t w = Columns(text);
  return text + (w < width ? std::string(width - w, ' ') : std::string());
}

nlohmann::json LatencyJson(const LatencyRecorder& l) {
  return {{"count", l.count()},
          {"p50_us", l.Percentile(50)},
          {"p99_us", l.Percentile(99)},
          {"max_us", l.Max()},
          {"total_us", l.total_micros()}};
}

}  // namespace

void PrintSummary(std::FILE* out, const RunInfo& info, const WorkloadResult& result) {
  const Counters& k = result.counters;
  const Shape& s = info.shape;
  auto line = [out](const std::string& text) { std::fprintf(out, "%s\n", text.c_str()); };
  auto row = [&line](std::string_view label, const std::string& value) {
    std::string text = "  " + std::string(label);
    text.append(label.size() < 20 ? 20 - label.size() : 1, ' ');
    line(text + value);
  };
  const uint64_t looked = k.blocks_hit + k.blocks_missed;

  line("wombatkv-workload summary");
  row("workload", std::to_string(s.conversations) + " conversations x " +
                      std::to_string(s.turns) + " turns; system prompt " +
                      std::to_string(s.system_blocks) + " blocks; " + TurnBlocksText(s) +
                      " blocks per turn");
  row("blocks", cli::HumanBytes(s.block_bytes) + " each, seed " + std::to_string(s.seed));
  row("data dir", info.data_dir + (info.fresh ? " (wiped by --fresh)" : ""));
  row("L2", info.l2);
  row("namespace", info.ns + ", fingerprint " + info.fp.ToHex() + " (synthetic model)");
  row("at start", info.at_start.l0_chains == 0
                      ? std::string("no published chains in the data directory")
                      : std::to_string(info.at_start.l0_chains) + " published chains, " +
                            std::to_string(info.at_start.l0_blocks) +
                            " blocks (all namespaces) already in the data directory");
  line("");
  row("turns", std::to_string(k.turns) + " of " + std::to_string(k.turns_total) + " in " +
                   FormatMicros(k.elapsed_micros) + " (" +
                   Fmt("%.1f", k.elapsed_micros
                                   ? static_cast<double>(k.turns) * 1e6 /
                                         static_cast<double>(k.elapsed_micros)
                                   : 0.0) +
                   " turns/s)");
  row("lookups", std::to_string(k.lookups) + " over " + std::to_string(k.keys_looked_up) +
                     " keys");
  row("blocks hit", std::to_string(k.blocks_hit) + " of " + std::to_string(looked) + " (" +
                        Fmt("%.1f%%", Percent(k.blocks_hit, looked)) + " hit rate)");
  std::string earlier = std::to_string(k.blocks_from_earlier);
  if (k.blocks_hit == 0) {
    earlier += " (nothing was restored)";
  } else if (k.blocks_from_earlier == 0) {
    earlier += " (every hit was a block this run stored itself)";
  } else if (k.blocks_from_earlier == k.blocks_hit) {
    earlier += " blocks: every hit was stored by an earlier run (restored across restart)";
  } else {
    earlier += " blocks were stored by an earlier run (or another process)";
  }
  row("  from earlier run", earlier);
  row("blocks missed", std::to_string(k.blocks_missed) + " -> put " +
                           std::to_string(k.blocks_put) + " blocks, published " +
                           std::to_string(k.publishes) + " chains" +
                           (k.publishes_skipped
                                ? " (" + std::to_string(k.publishes_skipped) +
                                      " turns fully cached: nothing to publish)"
                                : ""));
  const uint64_t compacted = info.at_end.heads_compacted - info.at_start.heads_compacted;
  if (compacted > 0) {
    row("  heads compacted", std::to_string(compacted) +
                                 " older heads replaced by the longer chain of the same "
                                 "conversation");
  }
  if (k.get_misses > 0) {
    row("get misses", std::to_string(k.get_misses) +
                          " lookups hit but the get missed (evicted in between): recomputed");
  }
  row("bytes restored",
      k.bytes_restored == 0
          ? std::string("0")
          : Mib(k.bytes_restored) + " at " + Rate(k.bytes_restored, result.get.total_micros()) +
                " (bytes handed over per second inside GetBlocks: RAM hits are borrowed, not "
                "copied)");
  row("bytes stored",
      k.bytes_put == 0
          ? std::string("0 (nothing new to store)")
          : Mib(k.bytes_put) + " at " +
                Rate(k.bytes_put, result.put.total_micros() + result.publish.total_micros()) +
                " (time inside PutBlocks + PublishChain)");
  const uint64_t l2_reads = info.at_end.l2_gets - info.at_start.l2_gets;
  const uint64_t l2_read_bytes = info.at_end.l2_get_bytes - info.at_start.l2_get_bytes;
  const uint64_t l2_writes = info.at_end.l2_puts - info.at_start.l2_puts;
  const uint64_t l2_write_bytes = info.at_end.l2_put_bytes - info.at_start.l2_put_bytes;
  row("L2 traffic", "read " + std::to_string(l2_reads) + " objects (" + Mib(l2_read_bytes) +
                        "), wrote " + std::to_string(l2_writes) + " objects (" +
                        Mib(l2_write_bytes) + ")");
  row("RAM cache", std::to_string(info.at_end.cache_hits - info.at_start.cache_hits) +
                       " hits, " +
                       std::to_string(info.at_end.cache_misses - info.at_start.cache_misses) +
                       " misses");
  row("verified", std::to_string(k.blocks_hit) + " restored blocks checked byte for byte, " +
                      std::to_string(k.mismatched_blocks) + " mismatched");
  line("");
  line("  latency              calls       p50       p99       max");
  auto lat = [&line](const char* name, const LatencyRecorder& l) {
    std::string text = "    " + PadRight(name, 17) + PadLeft(std::to_string(l.count()), 5);
    for (uint64_t v : {l.Percentile(50), l.Percentile(99), l.Max()}) {
      text += PadLeft(l.count() ? FormatMicros(v) : "-", 10);
    }
    line(text);
  };
  lat("lookup", result.lookup);
  lat("get (restore)", result.get);
  lat("put", result.put);
  lat("publish", result.publish);
  line("");
  if (!result.error.ok()) {
    line("  stopped early at " + result.error_what + ": " + result.error.ToString());
  } else if (k.mismatched_blocks > 0) {
    line("  FAILED: " + std::to_string(k.mismatched_blocks) +
         " restored blocks differ from the bytes that were stored");
  } else if (k.blocks_put > 0) {
    line("  Run it again: the next run finds these blocks in " + info.data_dir +
         " and restores them instead of storing them.");
  } else if (k.blocks_hit > 0) {
    line("  Everything was restored from the data directory: nothing had to be recomputed.");
  }
}

nlohmann::json SummaryJson(const RunInfo& info, const WorkloadResult& result) {
  const Counters& k = result.counters;
  const Shape& s = info.shape;
  const uint64_t looked = k.blocks_hit + k.blocks_missed;
  nlohmann::json doc = {
      {"workload",
       {{"conversations", s.conversations},
        {"turns", s.turns},
        {"system_blocks", s.system_blocks},
        {"turn_blocks", s.turn_blocks},
        {"fixed_turn_blocks", s.fixed_turn_blocks},
        {"block_bytes", s.block_bytes},
        {"seed", s.seed}}},
      {"data_dir", info.data_dir},
      {"l2", info.l2},
      {"fresh", info.fresh},
      {"namespace", info.ns},
      {"fingerprint", info.fp.ToHex()},
      {"at_start", {{"chains", info.at_start.l0_chains}, {"blocks", info.at_start.l0_blocks}}},
      {"turns", k.turns},
      {"turns_total", k.turns_total},
      {"lookups", k.lookups},
      {"keys_looked_up", k.keys_looked_up},
      {"blocks_hit", k.blocks_hit},
      {"blocks_missed", k.blocks_missed},
      {"hit_rate", looked ? static_cast<double>(k.blocks_hit) / static_cast<double>(looked) : 0.0},
      {"blocks_from_earlier_run", k.blocks_from_earlier},
      {"get_misses", k.get_misses},
      {"mismatched_blocks", k.mismatched_blocks},
      {"bytes_restored", k.bytes_restored},
      {"blocks_put", k.blocks_put},
      {"bytes_stored", k.bytes_put},
      {"publishes", k.publishes},
      {"publishes_skipped", k.publishes_skipped},
      {"elapsed_us", k.elapsed_micros},
      {"latency",
       {{"lookup", LatencyJson(result.lookup)},
        {"get", LatencyJson(result.get)},
        {"put", LatencyJson(result.put)},
        {"publish", LatencyJson(result.publish)}}},
      {"throughput",
       {{"restore_mib_per_s", MibPerSec(k.bytes_restored, result.get.total_micros())},
        {"store_mib_per_s",
         MibPerSec(k.bytes_put, result.put.total_micros() + result.publish.total_micros())},
        {"turns_per_s", k.elapsed_micros ? static_cast<double>(k.turns) * 1e6 /
                                               static_cast<double>(k.elapsed_micros)
                                         : 0.0}}},
      {"store",
       {{"l2_gets", info.at_end.l2_gets - info.at_start.l2_gets},
        {"l2_get_bytes", info.at_end.l2_get_bytes - info.at_start.l2_get_bytes},
        {"l2_puts", info.at_end.l2_puts - info.at_start.l2_puts},
        {"l2_put_bytes", info.at_end.l2_put_bytes - info.at_start.l2_put_bytes},
        {"cache_hits", info.at_end.cache_hits - info.at_start.cache_hits},
        {"cache_misses", info.at_end.cache_misses - info.at_start.cache_misses},
        {"heads_compacted", info.at_end.heads_compacted - info.at_start.heads_compacted}}},
  };
  if (result.error.ok()) {
    doc["error"] = nullptr;
  } else {
    doc["error"] = {{"code", std::string(CodeName(result.error.code()))},
                    {"what", result.error_what},
                    {"message", result.error.message()}};
  }
  return doc;
}

}  // namespace wombatkv::workload
