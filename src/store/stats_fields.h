// Every StoreStats counter by name, in declaration order: the order they travel in on the wire
// (append only, wire/codec.cc) and the names wmbt_kv_stats_json and `wombatkv stat --json` print.
// One table, so that a counter added to StoreStats reaches all three (the static_assert below
// fails until it is listed here).
#pragma once

#include <cstdint>

#include "wombatkv/store.h"

namespace wombatkv {

struct StoreStatsField {
  const char* name;
  uint64_t StoreStats::*member;
};

inline constexpr StoreStatsField kStoreStatsFields[] = {
    {"l0_blocks", &StoreStats::l0_blocks},
    {"l0_chains", &StoreStats::l0_chains},
    {"l0_memory_bytes", &StoreStats::l0_memory_bytes},
    {"lookups", &StoreStats::lookups},
    {"lookup_keys", &StoreStats::lookup_keys},
    {"lookup_hit_keys", &StoreStats::lookup_hit_keys},
    {"cache_bytes", &StoreStats::cache_bytes},
    {"cache_entries", &StoreStats::cache_entries},
    {"cache_pinned_bytes", &StoreStats::cache_pinned_bytes},
    {"cache_hits", &StoreStats::cache_hits},
    {"cache_misses", &StoreStats::cache_misses},
    {"cache_evictions", &StoreStats::cache_evictions},
    {"puts", &StoreStats::puts},
    {"put_bytes", &StoreStats::put_bytes},
    {"publishes", &StoreStats::publishes},
    {"publish_conflicts", &StoreStats::publish_conflicts},
    {"gets", &StoreStats::gets},
    {"get_hits", &StoreStats::get_hits},
    {"get_misses", &StoreStats::get_misses},
    {"get_bytes", &StoreStats::get_bytes},
    {"pending_blocks", &StoreStats::pending_blocks},
    {"heads_compacted", &StoreStats::heads_compacted},
    {"l2_puts", &StoreStats::l2_puts},
    {"l2_put_bytes", &StoreStats::l2_put_bytes},
    {"l2_gets", &StoreStats::l2_gets},
    {"l2_get_bytes", &StoreStats::l2_get_bytes},
    {"l2_errors", &StoreStats::l2_errors},
    {"corruptions_detected", &StoreStats::corruptions_detected},
    {"l2_referenced_bytes", &StoreStats::l2_referenced_bytes},
    {"l2_unreferenced_bytes", &StoreStats::l2_unreferenced_bytes},
    {"evict_passes", &StoreStats::evict_passes},
    {"evict_chains", &StoreStats::evict_chains},
    {"evict_heads_deleted", &StoreStats::evict_heads_deleted},
    {"evict_blocks", &StoreStats::evict_blocks},
    {"evict_bytes", &StoreStats::evict_bytes},
    {"evict_freed_bytes", &StoreStats::evict_freed_bytes},
    {"evict_skipped_in_flight", &StoreStats::evict_skipped_in_flight},
    {"evict_conflicts", &StoreStats::evict_conflicts},
    {"gc_passes", &StoreStats::gc_passes},
    {"gc_blobs_deleted", &StoreStats::gc_blobs_deleted},
    {"gc_bytes_freed", &StoreStats::gc_bytes_freed},
    {"gc_delete_failures", &StoreStats::gc_delete_failures},
    {"disk_cache_bytes", &StoreStats::disk_cache_bytes},
    {"disk_cache_files", &StoreStats::disk_cache_files},
    {"disk_cache_budget_bytes", &StoreStats::disk_cache_budget_bytes},
    {"disk_cache_hits", &StoreStats::disk_cache_hits},
    {"disk_cache_misses", &StoreStats::disk_cache_misses},
    {"disk_cache_evictions", &StoreStats::disk_cache_evictions},
    {"disk_cache_fills", &StoreStats::disk_cache_fills},
    {"disk_cache_dropped", &StoreStats::disk_cache_dropped},
    {"l2_attempts", &StoreStats::l2_attempts},
    {"l2_retries", &StoreStats::l2_retries},
    {"l2_throttled", &StoreStats::l2_throttled},
    {"disk_cache_fills_skipped", &StoreStats::disk_cache_fills_skipped},
    {"put_blocks_helped", &StoreStats::put_blocks_helped},
    {"uploads_parked", &StoreStats::uploads_parked},
    {"uploads_parked_bytes", &StoreStats::uploads_parked_bytes},
    {"l2_journal_syncs", &StoreStats::l2_journal_syncs},
    {"l2_journal_records_synced", &StoreStats::l2_journal_records_synced},
    {"l2_journal_sync_micros", &StoreStats::l2_journal_sync_micros},
    {"l2_journal_preallocations", &StoreStats::l2_journal_preallocations},
    {"l2_journal_preallocate_micros", &StoreStats::l2_journal_preallocate_micros},
    {"cache_budget_bytes", &StoreStats::cache_budget_bytes},
    {"l2_blobs_compressed", &StoreStats::l2_blobs_compressed},
    {"l2_compress_saved_bytes", &StoreStats::l2_compress_saved_bytes},
    {"refreshes", &StoreStats::refreshes},
    {"refresh_failures", &StoreStats::refresh_failures},
    {"refresh_staleness_us", &StoreStats::refresh_staleness_us},
    {"pending_blocks_forgotten", &StoreStats::pending_blocks_forgotten},
    {"l0_blocks_reassigned", &StoreStats::l0_blocks_reassigned},
    {"gc_heads_read", &StoreStats::gc_heads_read},
    {"gc_heads_unchanged", &StoreStats::gc_heads_unchanged},
    {"gc_pass_micros", &StoreStats::gc_pass_micros},
    {"gc_blobs_recovered", &StoreStats::gc_blobs_recovered},
    {"evict_lease_waits", &StoreStats::evict_lease_waits},
    {"l2_conditional_writes_emulated", &StoreStats::l2_conditional_writes_emulated},
};

static_assert(sizeof(kStoreStatsFields) / sizeof(kStoreStatsFields[0]) * sizeof(uint64_t) ==
                  sizeof(StoreStats),
              "every StoreStats counter must be listed: add new ones at the end");

}  // namespace wombatkv
