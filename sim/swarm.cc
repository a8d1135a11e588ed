#include "sim/swarm.h"

#include <cstdio>

namespace wombatkv::sim {

const std::vector<std::string>& FaultClassNames() {
  static const std::vector<std::string> names = {
      "503",        "timeout",    "lost",       "shortlist", "latency",      "list-lag",
      "crash-step", "crash-mid",  "brownout",   "corrupt",   "corrupt-head", "l1-machine",
      "l1-lost",    "l1-corrupt", "session",    "cas",       "variant",      "buggify",
      "evict",      "gc",         "clock-jump", "compress",  "auto-refresh", "save",
      "async",      "disk-cache"};
  return names;
}

SwarmConfig SwarmConfig::FromSeed(uint64_t seed, uint64_t steps, bool capacity,
                                  const SwarmOverrides& overrides) {
  SimRandom r(seed * 0x2545f4914f6cdd1dull + 7);
  SwarmConfig c;
  c.seed = seed;
  c.safety_steps = steps;
  c.hosts = static_cast<int>(r.Range(1, 4));
  c.namespaces = static_cast<int>(r.Range(1, 3));
  c.fingerprints = static_cast<int>(r.Range(1, 3));
  c.block_bytes_max = r.Pick<uint64_t>({0, 1, 64, 1024, 4096, 16384, 65536});
  c.block_bytes_min = r.Chance(0.5) ? 0 : c.block_bytes_max / 2;
  c.cache_bytes_max = r.Pick<uint64_t>({0, 1, 100, 4096, 65536, 1u << 20, 64u << 20});
  // Each fault class is on for roughly half the seeds; when on, at a tame or a hostile rate.
  FaultRates& f = c.faults;
  if (r.Chance(0.5)) f.unavailable = r.Pick({0.01, 0.05, 0.2});
  if (r.Chance(0.3)) f.timeout = r.Pick({0.01, 0.05});
  if (r.Chance(0.5)) f.lost_response = r.Pick({0.01, 0.05, 0.2});
  if (r.Chance(0.5)) f.short_list = r.Pick({0.1, 0.5, 1.0});
  if (r.Chance(0.7)) f.latency_us_max = r.Pick<uint64_t>({100, 10'000, 200'000});
  if (r.Chance(0.6)) c.p_crash_step = r.Pick({0.005, 0.02, 0.05});
  if (r.Chance(0.6)) c.p_crash_mid = r.Pick({0.01, 0.05, 0.1});
  if (r.Chance(0.2)) c.p_brownout_toggle = 0.02;
  if (r.Chance(0.4)) c.p_corrupt = r.Pick({0.005, 0.02});
  if (r.Chance(0.6)) c.p_session = r.Pick({0.2, 0.5});
  c.p_cas = r.Pick({0.0, 0.5, 1.0});
  if (r.Chance(0.3)) c.p_variant = r.Pick({0.05, 0.3});
  c.p_resave_all = r.Pick({0.0, 0.5, 1.0});
  if (r.Chance(0.5)) c.p_buggify = r.Pick({0.05, 0.25});
  // Drawn last, so the knobs above stay what they were for every seed.
  c.capacity = r.Chance(0.4) || capacity;
  if (c.capacity) {
    // Budgets from "a few blocks" to "never binding"; a TTL on some seeds.
    c.ns_budget_bytes = r.Pick<uint64_t>({0, 1, 600, 4096, 20000, 200000});
    if (c.ns_budget_bytes == 0 || r.Chance(0.3)) c.ns_ttl_seconds = r.Range(1, 5);
    c.gc_grace_us = r.Pick<uint64_t>({0, 1, 200'000, 2'000'000});
    c.p_evict = r.Pick({0.02, 0.1, 0.3});
    c.p_gc = r.Pick({0.02, 0.1, 0.3});
    c.p_clock_jump = r.Pick({0.0, 0.01, 0.05});
  }
  // Drawn after everything above, so older seeds keep their knobs.
  if (r.Chance(0.3)) f.list_lag_us = r.Pick<uint64_t>({1'000, 200'000, 3'000'000});
  if (r.Chance(0.25)) c.p_corrupt_head = r.Pick({0.005, 0.02});
  if (r.Chance(0.3)) c.block_compress_level = r.Pick({1, 3, 9});
  if (r.Chance(0.3)) c.refresh_interval_ms = r.Pick<uint64_t>({1, 5, 50});
  // Evict-gc: a publish grace of seconds, so that clock jumps make puts abandoned (forgotten).
  if (c.capacity && r.Chance(0.5)) c.publish_grace_seconds = r.Range(1, 5);
  if (c.refresh_interval_ms > 0 && c.hosts > 1) c.refresh_odd_hosts_only = r.Chance(0.5);
  if (r.Chance(0.6)) c.p_save = r.Pick({0.3, 0.7, 1.0});
  if (r.Chance(0.5)) c.p_async = r.Pick({0.3, 1.0});
  if (c.capacity && r.Chance(0.5)) {
    c.disk_cache_bytes_max = r.Pick<uint64_t>({2048, 20000, 200000, 64u << 20});
  }

  if (overrides.list_lag_us > 0) f.list_lag_us = overrides.list_lag_us;
  if (overrides.buggify_percent > 0) c.p_buggify = overrides.buggify_percent / 100.0;
  if (overrides.refresh_interval_ms > 0) c.refresh_interval_ms = overrides.refresh_interval_ms;
  const auto off = [&](const char* name) { return overrides.off.count(name) > 0; };
  if (off("503")) f.unavailable = 0;
  if (off("timeout")) f.timeout = 0;
  if (off("lost")) f.lost_response = 0;
  if (off("shortlist")) f.short_list = 0;
  if (off("latency")) f.latency_us_max = 0;
  if (off("list-lag")) f.list_lag_us = 0;
  if (off("crash-step")) c.p_crash_step = 0;
  if (off("crash-mid")) c.p_crash_mid = 0;
  if (off("brownout")) c.p_brownout_toggle = 0;
  if (off("corrupt")) c.p_corrupt = 0;
  if (off("corrupt-head")) c.p_corrupt_head = 0;
  if (off("l1-machine")) c.l1_machine = false;
  if (off("l1-lost")) c.l1_lost = false;
  if (off("l1-corrupt")) c.l1_corrupt = false;
  if (off("session")) c.p_session = 0;
  if (off("cas")) c.p_cas = 0;
  if (off("variant")) c.p_variant = 0;
  if (off("buggify")) c.p_buggify = 0;
  if (off("evict")) c.p_evict = 0;
  if (off("gc")) c.p_gc = 0;
  if (off("clock-jump")) c.p_clock_jump = 0;
  if (off("compress")) c.block_compress_level = 0;
  if (off("auto-refresh")) c.refresh_interval_ms = 0;
  if (off("save")) c.p_save = 0;
  if (off("async")) c.p_async = 0;
  if (off("disk-cache")) c.disk_cache_bytes_max = 0;
  if (overrides.hosts > 0) c.hosts = overrides.hosts;
  return c;
}

std::vector<std::string> SwarmConfig::FaultsOn() const {
  const FaultRates& f = faults;
  const bool crashes = p_crash_step > 0 || p_crash_mid > 0;
  // One flag per FaultClassNames() entry, in its order.
  // clang-format off
  const bool on[] = {f.unavailable > 0, f.timeout > 0, f.lost_response > 0, f.short_list > 0,
                     f.latency_us_max > 0, f.list_lag_us > 0, p_crash_step > 0, p_crash_mid > 0,
                     p_brownout_toggle > 0, p_corrupt > 0, p_corrupt_head > 0,
                     crashes && l1_machine, crashes && l1_lost, crashes && l1_corrupt,
                     p_session > 0, p_cas > 0, p_variant > 0, p_buggify > 0, p_evict > 0,
                     p_gc > 0, p_clock_jump > 0, block_compress_level > 0,
                     refresh_interval_ms > 0, p_save > 0, p_async > 0,
                     disk_cache_bytes_max > 0};
  // clang-format on
  std::vector<std::string> out;
  const auto& names = FaultClassNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (on[i]) out.push_back(names[i]);
  }
  return out;
}

L1CrashMode SwarmConfig::Allowed(L1CrashMode m) const {
  const bool ok =
      (m != L1CrashMode::kMachineSubset && m != L1CrashMode::kMachinePrefix) || l1_machine;
  if (!ok || (m == L1CrashMode::kLost && !l1_lost) || (m == L1CrashMode::kCorrupt && !l1_corrupt)) {
    return L1CrashMode::kProcess;
  }
  return m;
}

std::string SwarmConfig::Describe() const {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "hosts=%d ns=%d fps=%d block=%llu..%llu cache=%llu 503=%.2f timeout=%.2f "
      "lost=%.2f shortlist=%.2f lat<=%lluus crash(step=%.3f mid=%.2f) brownout=%.2f "
      "corrupt=%.3f corrupt-head=%.3f listlag=%lluus session=%.1f cas=%.1f "
      "variant=%.2f resave=%.1f buggify=%.2f zstd=%d refresh=%llums%s save=%.1f async=%.1f "
      "steps=%llu",
      hosts, namespaces, fingerprints, (unsigned long long)block_bytes_min,
      (unsigned long long)block_bytes_max, (unsigned long long)cache_bytes_max, faults.unavailable,
      faults.timeout, faults.lost_response, faults.short_list,
      (unsigned long long)faults.latency_us_max, p_crash_step, p_crash_mid, p_brownout_toggle,
      p_corrupt, p_corrupt_head, (unsigned long long)faults.list_lag_us, p_session, p_cas,
      p_variant, p_resave_all, p_buggify, block_compress_level,
      (unsigned long long)refresh_interval_ms, refresh_odd_hosts_only ? "(odd hosts)" : "", p_save,
      p_async, (unsigned long long)safety_steps);
  if (!capacity) return buf;
  char cap[256];
  std::snprintf(
      cap, sizeof cap,
      " evict-gc(budget=%llu ttl=%llus grace=%lluus publish-grace=%llus evict=%.2f gc=%.2f "
      "jump=%.2f disk-cache=%llu)",
      (unsigned long long)ns_budget_bytes, (unsigned long long)ns_ttl_seconds,
      (unsigned long long)gc_grace_us, (unsigned long long)publish_grace_seconds, p_evict, p_gc,
      p_clock_jump, (unsigned long long)disk_cache_bytes_max);
  return std::string(buf) + cap;
}

}  // namespace wombatkv::sim
