#include "daemon/metrics_text.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "wire/codec.h"

namespace wombatkv {
namespace {

class Page {
 public:
  void Family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void Sample(const std::string& name, const std::string& labels, uint64_t value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += ' ';
    out_ += std::to_string(value);
    out_ += '\n';
  }
  void SampleSeconds(const std::string& name, const std::string& labels, uint64_t micros) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(micros) / 1e6);
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += ' ';
    out_ += buf;
    out_ += '\n';
  }
  // A one-sample family.
  void One(const char* name, const char* type, const char* help, uint64_t value) {
    Family(name, type, help);
    Sample(name, "", value);
  }
  // A one-sample counter (or gauge) of seconds, kept in microseconds.
  void OneSeconds(const char* name, const char* help, uint64_t micros,
                  const char* type = "counter") {
    Family(name, type, help);
    SampleSeconds(name, "", micros);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

uint64_t Load(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

std::string OpLabel(size_t op) {
  return "op=\"" + (op == 0 ? std::string("unknown") : wire::OpName(static_cast<uint16_t>(op))) +
         "\"";
}

using ServiceSources = std::array<const ServiceMetrics*, kTransports>;

// One sample of `name` per transport served, labelled `labels` (may be empty) and the transport.
void PerTransport(Page& p, const ServiceSources& sources, const std::string& name,
                  const std::string& labels,
                  const std::function<uint64_t(const ServiceMetrics&)>& value) {
  for (size_t t = 0; t < kTransports; ++t) {
    if (sources[t] == nullptr) continue;
    const std::string transport =
        std::string("transport=\"") + TransportName(static_cast<Transport>(t)) + "\"";
    p.Sample(name, labels.empty() ? transport : labels + "," + transport, value(*sources[t]));
  }
}

void RenderService(Page& p, const ServiceSources& sources) {
  // Only ops that exist (and slot 0, unknown ops) get series.
  const size_t ops = std::min<size_t>(ServiceMetrics::kOps, wire::kOpMax + 1);
  p.Family("wombatkv_requests_total", "counter", "Requests handled, by op and transport.");
  for (size_t op = 0; op < ops; ++op) {
    PerTransport(p, sources, "wombatkv_requests_total", OpLabel(op),
                 [op](const ServiceMetrics& m) { return Load(m.requests[op]); });
  }
  p.Family("wombatkv_request_errors_total", "counter",
           "Requests answered with a non-OK status (misses included), by op and transport.");
  for (size_t op = 0; op < ops; ++op) {
    PerTransport(p, sources, "wombatkv_request_errors_total", OpLabel(op),
                 [op](const ServiceMetrics& m) { return Load(m.errors[op]); });
  }
  p.Family("wombatkv_request_duration_seconds", "histogram",
           "Time in the service (decode, store call, encode), by op and transport; transport "
           "time excluded.");
  for (size_t t = 0; t < kTransports; ++t) {
    if (sources[t] == nullptr) continue;
    const ServiceMetrics& m = *sources[t];
    for (size_t op = 0; op < ops; ++op) {
      const std::string label =
          OpLabel(op) + ",transport=\"" + TransportName(static_cast<Transport>(t)) + "\"";
      uint64_t cumulative = 0;
      // ServiceMetrics bucket i holds latencies below 2^i us not counted by a lower bucket; the
      // last bucket also holds everything above, so it becomes +Inf.
      for (size_t b = 0; b < ServiceMetrics::kLatencyBuckets; ++b) {
        cumulative += Load(m.latency_us_buckets[op][b]);
        std::string le;
        if (b + 1 == ServiceMetrics::kLatencyBuckets) {
          le = "+Inf";
        } else {
          // Exact: 2^b microseconds has at most six decimals in seconds (%g rounded 4.194304 s
          // down to 4.1943, below the bucket's bound). Trailing zeros trimmed.
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(1ull << b) / 1e6);
          le = buf;
          while (le.back() == '0') le.pop_back();
          if (le.back() == '.') le.pop_back();
        }
        p.Sample("wombatkv_request_duration_seconds_bucket", label + ",le=\"" + le + "\"",
                 cumulative);
      }
      p.SampleSeconds("wombatkv_request_duration_seconds_sum", label, Load(m.latency_us_sum[op]));
      p.Sample("wombatkv_request_duration_seconds_count", label, cumulative);
    }
  }
  const struct {
    const char* name;
    const char* help;
    std::atomic<uint64_t> ServiceMetrics::*counter;
  } totals[] = {
      {"wombatkv_request_payload_bytes_total", "Payload bytes received in requests, by transport.",
       &ServiceMetrics::bytes_in},
      {"wombatkv_response_payload_bytes_total", "Payload bytes sent in responses, by transport.",
       &ServiceMetrics::bytes_out},
      {"wombatkv_auth_failures_total",
       "Requests refused for a missing, wrong or too narrow auth token, by transport.",
       &ServiceMetrics::auth_failures},
      {"wombatkv_bad_requests_total",
       "Requests with undecodable fields or unknown ops, by transport.",
       &ServiceMetrics::bad_requests},
  };
  for (const auto& total : totals) {
    p.Family(total.name, "counter", total.help);
    PerTransport(p, sources, total.name, "",
                 [&](const ServiceMetrics& m) { return Load(m.*total.counter); });
  }
}

void RenderStore(Page& p, const StoreStats& s) {
  p.One("wombatkv_l0_blocks", "gauge", "Blocks indexed in L0 (published chains).", s.l0_blocks);
  p.One("wombatkv_l0_chains", "gauge", "Published chains indexed in L0.", s.l0_chains);
  p.One("wombatkv_l0_memory_bytes", "gauge", "RAM used by the L0 index.", s.l0_memory_bytes);
  p.One("wombatkv_l0_blocks_reassigned_total", "counter",
        "L0 blocks whose bytes a departed chain had given that took the newest remaining "
        "chain's, other bytes.",
        s.l0_blocks_reassigned);
  p.Family("wombatkv_plane_hits_total", "counter",
           "Hits per plane: l0 = lookup keys found, ram = payloads served from the RAM cache, "
           "disk = from the local disk cache after a RAM miss, l2 = payloads read from L2.");
  p.Sample("wombatkv_plane_hits_total", "plane=\"l0\"", s.lookup_hit_keys);
  p.Sample("wombatkv_plane_hits_total", "plane=\"ram\"", s.cache_hits);
  p.Sample("wombatkv_plane_hits_total", "plane=\"disk\"", s.disk_cache_hits);
  p.Sample("wombatkv_plane_hits_total", "plane=\"l2\"", s.l2_gets);
  p.Family("wombatkv_plane_misses_total", "counter",
           "Misses per plane: l0 = lookup keys not found, ram = RAM cache misses, disk = RAM "
           "misses the disk cache did not serve (0 without a disk cache).");
  p.Sample("wombatkv_plane_misses_total", "plane=\"l0\"",
           s.lookup_keys > s.lookup_hit_keys ? s.lookup_keys - s.lookup_hit_keys : 0);
  p.Sample("wombatkv_plane_misses_total", "plane=\"ram\"", s.cache_misses);
  p.Sample("wombatkv_plane_misses_total", "plane=\"disk\"", s.disk_cache_misses);
  p.One("wombatkv_lookups_total", "counter", "LookupPrefix calls.", s.lookups);
  p.One("wombatkv_cache_bytes", "gauge", "Payload bytes in the RAM cache.", s.cache_bytes);
  p.One("wombatkv_cache_entries", "gauge", "Payloads in the RAM cache.", s.cache_entries);
  p.One("wombatkv_cache_budget_bytes", "gauge", "The RAM cache's byte budget.",
        s.cache_budget_bytes);
  p.One("wombatkv_cache_pinned_bytes", "gauge",
        "RAM cache bytes pinned by uploads in flight (borrowed bytes: wombatkv_shm_shared_*).",
        s.cache_pinned_bytes);
  p.One("wombatkv_cache_evictions_total", "counter", "Payloads evicted from the RAM cache.",
        s.cache_evictions);
  p.One("wombatkv_disk_cache_bytes", "gauge",
        "Bytes of files in the local disk cache (0 without one).", s.disk_cache_bytes);
  p.One("wombatkv_disk_cache_files", "gauge", "Files in the local disk cache.",
        s.disk_cache_files);
  p.One("wombatkv_disk_cache_budget_bytes", "gauge", "The local disk cache's byte budget.",
        s.disk_cache_budget_bytes);
  p.One("wombatkv_disk_cache_evictions_total", "counter",
        "Files evicted from the local disk cache to stay within its budget.",
        s.disk_cache_evictions);
  p.One("wombatkv_disk_cache_fills_total", "counter",
        "Files written to the local disk cache (after an L2 read or an upload).",
        s.disk_cache_fills);
  p.One("wombatkv_disk_cache_dropped_total", "counter",
        "Disk cache files that failed their check: deleted and read from L2, never served.",
        s.disk_cache_dropped);
  p.One("wombatkv_disk_cache_fills_skipped_total", "counter",
        "Disk cache fills not made: no room, larger than the budget, or too many queued.",
        s.disk_cache_fills_skipped);
  p.One("wombatkv_put_blocks_helped_total", "counter",
        "Blocks of large puts copied and hashed by the store's copy helper thread.",
        s.put_blocks_helped);
  p.One("wombatkv_uploads_parked_total", "counter",
        "Uploads that waited for a large put to stop copying (the upload gate).",
        s.uploads_parked);
  p.One("wombatkv_uploads_parked_bytes", "gauge",
        "Payload bytes of the uploads waiting in the upload gate now.", s.uploads_parked_bytes);
  p.One("wombatkv_puts_total", "counter", "Blocks put.", s.puts);
  p.One("wombatkv_put_bytes_total", "counter", "Payload bytes put.", s.put_bytes);
  p.One("wombatkv_publishes_total", "counter", "Chains published.", s.publishes);
  p.One("wombatkv_publish_conflicts_total", "counter", "Publishes that lost a race (CAS).",
        s.publish_conflicts);
  p.One("wombatkv_gets_total", "counter", "GetBlocks calls.", s.gets);
  p.One("wombatkv_get_hits_total", "counter", "GetBlocks calls that returned every block.",
        s.get_hits);
  p.One("wombatkv_get_misses_total", "counter", "GetBlocks calls that missed.", s.get_misses);
  p.One("wombatkv_get_bytes_total", "counter", "Payload bytes returned by gets.", s.get_bytes);
  p.One("wombatkv_pending_blocks", "gauge", "Blocks put but not yet published.", s.pending_blocks);
  p.One("wombatkv_pending_blocks_forgotten_total", "counter",
        "Blocks put but never published, forgotten once older than both graces (publish, GC).",
        s.pending_blocks_forgotten);
  p.One("wombatkv_heads_compacted_total", "counter", "Redundant chain heads compacted.",
        s.heads_compacted);
  p.One("wombatkv_l2_puts_total", "counter", "Objects written to L2.", s.l2_puts);
  p.One("wombatkv_l2_put_bytes_total", "counter", "Bytes written to L2.", s.l2_put_bytes);
  p.One("wombatkv_l2_blobs_compressed_total", "counter",
        "Blobs written to L2 zstd-compressed (WMBT_KV_BLOCK_COMPRESS).", s.l2_blobs_compressed);
  p.One("wombatkv_l2_compress_saved_bytes_total", "counter",
        "L2 bytes compression saved against writing those blobs raw.", s.l2_compress_saved_bytes);
  p.One("wombatkv_refreshes_total", "counter",
        "Refreshes from L2 completed (at open, on request, automatic: WMBT_KV_REFRESH_INTERVAL).",
        s.refreshes);
  p.One("wombatkv_refresh_failures_total", "counter", "Refreshes from L2 that failed.",
        s.refresh_failures);
  p.OneSeconds("wombatkv_refresh_staleness_seconds",
               "How long ago the last completed refresh began: what other hosts published "
               "before then is visible here.",
               s.refresh_staleness_us, "gauge");
  p.One("wombatkv_l2_gets_total", "counter", "Objects read from L2.", s.l2_gets);
  p.One("wombatkv_l2_get_bytes_total", "counter", "Bytes read from L2.", s.l2_get_bytes);
  p.One("wombatkv_l2_errors_total", "counter", "Failed L2 (S3 or directory) operations.",
        s.l2_errors);
  p.One("wombatkv_l2_attempts_total", "counter",
        "HTTP requests sent to S3, retries included (0 for a local-directory L2).", s.l2_attempts);
  p.One("wombatkv_l2_retries_total", "counter",
        "S3 requests retried after throttling, a 5xx, a timeout or a reset.", s.l2_retries);
  p.One("wombatkv_l2_throttled_total", "counter", "S3 answers 503 SlowDown or 429.",
        s.l2_throttled);
  p.One("wombatkv_l2_journal_syncs_total", "counter",
        "fdatasyncs of the local L2's journal (group commits; 0 for S3).", s.l2_journal_syncs);
  p.One("wombatkv_l2_journal_records_synced_total", "counter",
        "Journal records those syncs made durable (divided by the syncs: records per commit).",
        s.l2_journal_records_synced);
  p.OneSeconds("wombatkv_l2_journal_sync_seconds_total", "Time spent in the journal's fdatasyncs.",
               s.l2_journal_sync_micros);
  p.One("wombatkv_l2_journal_preallocations_total", "counter",
        "Zero-fills of journal space ahead of the writes (each delays the round needing it).",
        s.l2_journal_preallocations);
  p.OneSeconds("wombatkv_l2_journal_preallocate_seconds_total", "Time spent in those zero-fills.",
               s.l2_journal_preallocate_micros);
  p.One("wombatkv_corruptions_detected_total", "counter",
        "Bytes that failed their content hash or checksum (never served).",
        s.corruptions_detected);
  p.One("wombatkv_l2_referenced_bytes", "gauge",
        "L2 bytes the store's chain heads reference (blobs, heads, known sidecars; all "
        "namespaces): what namespace budgets count.",
        s.l2_referenced_bytes);
  p.One("wombatkv_l2_unreferenced_bytes", "gauge",
        "L2 bytes of blobs no head references any more, not yet seen deleted by orphan GC.",
        s.l2_unreferenced_bytes);
  p.One("wombatkv_evict_passes_total", "counter", "Eviction passes (budgets and TTLs).",
        s.evict_passes);
  p.One("wombatkv_evict_chains_total", "counter",
        "Chain heads eviction rewrote shorter or deleted.", s.evict_chains);
  p.One("wombatkv_evict_heads_deleted_total", "counter", "Chain heads eviction deleted.",
        s.evict_heads_deleted);
  p.One("wombatkv_evict_blocks_total", "counter", "Head entries eviction removed.", s.evict_blocks);
  p.One("wombatkv_evict_bytes_total", "counter",
        "L2 bytes eviction stopped referencing (freed once orphan GC deletes the blobs).",
        s.evict_bytes);
  p.One("wombatkv_evict_freed_bytes_total", "counter",
        "L2 bytes eviction itself removed (heads, sidecars).", s.evict_freed_bytes);
  p.One("wombatkv_evict_skipped_in_flight_total", "counter",
        "Trims stopped by a block not yet published or borrowed.", s.evict_skipped_in_flight);
  p.One("wombatkv_evict_conflicts_total", "counter",
        "Heads that changed under eviction (re-read and re-planned).", s.evict_conflicts);
  p.One("wombatkv_gc_passes_total", "counter", "Orphan GC passes run by the store.", s.gc_passes);
  p.One("wombatkv_gc_blobs_deleted_total", "counter",
        "Unreferenced blobs orphan GC deleted from L2.", s.gc_blobs_deleted);
  p.One("wombatkv_gc_bytes_freed_total", "counter",
        "L2 bytes freed by orphan GC (deleted blobs only).", s.gc_bytes_freed);
  p.One("wombatkv_gc_delete_failures_total", "counter",
        "Orphan GC deletes that failed (left in L2, retried at the next pass).",
        s.gc_delete_failures);
  p.One("wombatkv_gc_heads_read_total", "counter", "Chain heads orphan GC passes read from L2.",
        s.gc_heads_read);
  p.One("wombatkv_gc_heads_unchanged_total", "counter",
        "Chain heads orphan GC passes did not read: listed with the ETag an earlier pass read.",
        s.gc_heads_unchanged);
  p.OneSeconds("wombatkv_gc_pass_seconds_total", "Time spent in orphan GC passes.",
               s.gc_pass_micros);
  p.One("wombatkv_gc_blobs_recovered_total", "counter",
        "Blobs orphan GC re-checked from the hold files of an earlier process that ended mid-pass.",
        s.gc_blobs_recovered);
  p.One("wombatkv_evict_lease_waits_total", "counter",
        "Eviction passes that left a namespace to another host holding its eviction lease.",
        s.evict_lease_waits);
  p.One("wombatkv_l2_conditional_writes_emulated", "gauge",
        "1 when the S3 server does not honour conditional writes: last writer wins, CAS publishes "
        "are refused (docs/s3.md).",
        s.l2_conditional_writes_emulated);
}

void RenderTcp(Page& p, const tcp::TcpServerStats& t) {
  p.One("wombatkv_tcp_connections_open", "gauge", "Open TCP client connections.",
        Load(t.connections_open));
  p.One("wombatkv_tcp_connections_accepted_total", "counter", "TCP connections accepted.",
        Load(t.connections_accepted));
  p.One("wombatkv_tcp_connections_refused_total", "counter",
        "TCP connections closed at once: over the connection limit.", Load(t.connections_refused));
  p.One("wombatkv_tcp_connections_idle_closed_total", "counter",
        "TCP connections closed for idleness (including ones stuck mid-frame).",
        Load(t.connections_idle_closed));
  p.One("wombatkv_tcp_connections_unauthenticated_closed_total", "counter",
        "TCP connections closed for no successful Hello within the hello timeout.",
        Load(t.connections_unauthenticated_closed));
  p.One("wombatkv_tcp_frames_in_total", "counter", "Request frames received.", Load(t.frames_in));
  p.One("wombatkv_tcp_frames_out_total", "counter", "Response frames queued.", Load(t.frames_out));
  p.One("wombatkv_tcp_frames_rejected_total", "counter",
        "Malformed frames (magic, version, length, CRC, body): answered, connection closed.",
        Load(t.frames_rejected));
  p.One("wombatkv_tcp_bytes_in_total", "counter", "Bytes received on TCP.", Load(t.bytes_in));
  p.One("wombatkv_tcp_bytes_out_total", "counter", "Bytes sent on TCP.", Load(t.bytes_out));
  p.One("wombatkv_tcp_loop_polls_total", "counter",
        "Times an event loop polled for the next request before sleeping (WMBT_KV_TCP_POLL).",
        Load(t.loop_spins));
  p.One("wombatkv_tcp_requests_inline_total", "counter",
        "Blocking requests of a lone connection run on the event loop.",
        Load(t.requests_inline));
  p.One("wombatkv_tcp_backlog_pauses_total", "counter",
        "Times a connection's reading stopped because its client left too many answers unread.",
        Load(t.backlog_pauses));
  p.One("wombatkv_tcp_requests_async_on_loop_total", "counter",
        "Small saves started on the event loop and answered by the journal's sync thread.",
        Load(t.requests_async_on_loop));
  p.One("wombatkv_tcp_answers_handed_to_loops_total", "counter",
        "Answers of a sync round's saves written by the event loops, not the sync thread.",
        Load(t.answers_handed_to_loops));
}

void RenderShm(Page& p, const ShmServerStats& s) {
  p.One("wombatkv_shm_clients", "gauge", "Clients attached over shared memory.", s.clients);
  p.One("wombatkv_shm_segments_live", "gauge",
        "Client segments mapped (detached ones until their last request finishes).",
        s.segments_live);
  p.One("wombatkv_shm_response_regions_live", "gauge",
        "Response regions clients have not released yet (their borrows).",
        s.response_regions_live);
  p.One("wombatkv_shm_response_bytes_live", "gauge", "Bytes in those regions.",
        s.response_bytes_live);
  p.One("wombatkv_shm_shared_payloads_live", "gauge",
        "Payload-arena payloads clients hold by reference (zero-copy gets not released yet).",
        s.shared_payloads_live);
  p.One("wombatkv_shm_shared_bytes_live", "gauge",
        "Bytes of those payloads (with shm_response_bytes_live: all a client's borrows hold).",
        s.shared_bytes_live);
  p.One("wombatkv_shm_shared_payloads_total", "counter",
        "Payloads passed by reference into a payload arena instead of copied.",
        s.shared_payloads);
  p.One("wombatkv_shm_arena_grants_total", "counter",
        "Payload-arena descriptors handed to clients.", s.arena_grants);
  p.One("wombatkv_shm_attaches_total", "counter", "Shared-memory attaches.", s.attaches);
  p.One("wombatkv_shm_detaches_total", "counter",
        "Shared-memory detaches (exits and crashes included).", s.detaches);
  p.One("wombatkv_shm_refusals_total", "counter",
        "Attaches refused: another uid, too many clients, segment creation failed.", s.refusals);
  p.One("wombatkv_shm_requests_total", "counter", "Requests taken from shared-memory rings.",
        s.requests);
  p.One("wombatkv_shm_doorbells_total", "counter",
        "Wake-ups clients asked for because no worker was awake.", s.doorbells);
  p.One("wombatkv_shm_idle_spins_total", "counter",
        "Times a worker out of requests spun for the next one.", s.idle_spins);
  p.One("wombatkv_shm_wakes_handed_total", "counter",
        "Client wake-ups a sync round handed to a worker instead of doing them itself.",
        s.wakes_handed);
  p.One("wombatkv_shm_workers_idle", "gauge", "Shared-memory workers asleep.", s.workers_idle);
  p.One("wombatkv_shm_requests_running", "gauge",
        "Shared-memory requests taken off a ring and not answered yet.", s.requests_running);
  p.One("wombatkv_shm_protocol_errors_total", "counter",
        "Malformed slots, bad counters, bogus releases (answered or disconnected).",
        s.protocol_errors);
  p.One("wombatkv_shm_responses_too_large_total", "counter",
        "Responses that did not fit the client's free response area.", s.responses_too_large);
}

}  // namespace

std::string RenderMetrics(const MetricsSources& sources) {
  Page p;
  p.Family("wombatkv_build_info", "gauge", "Always 1; the daemon's version is its label.");
  p.Sample("wombatkv_build_info", "version=\"" + sources.version + "\"", 1);
  p.One("wombatkv_start_time_seconds", "gauge", "When the daemon started, in seconds since 1970.",
        sources.start_unix_seconds);
  p.One("wombatkv_ready", "gauge", "1 once the store is open and the daemon serves requests.",
        sources.ready ? 1 : 0);
  p.One("wombatkv_healthy", "gauge",
        "0 once the store cannot take writes until wombatkvd restarts (/healthz says why).",
        sources.healthy ? 1 : 0);
  p.One("wombatkv_l2_up", "gauge",
        "0 while every request to a remote L2 (S3) fails: down, unreachable, credentials or bucket "
        "refused (/readyz says why); 1 otherwise.",
        sources.l2_up ? 1 : 0);
  const bool any_service = std::any_of(sources.service.begin(), sources.service.end(),
                                       [](const ServiceMetrics* m) { return m != nullptr; });
  if (any_service) RenderService(p, sources.service);
  if (sources.store) RenderStore(p, *sources.store);
  if (sources.tcp) RenderTcp(p, *sources.tcp);
  if (sources.shm) RenderShm(p, *sources.shm);
  return p.Take();
}

}  // namespace wombatkv
