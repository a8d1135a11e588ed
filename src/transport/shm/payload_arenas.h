// PayloadArenas: wombatkvd's shared-memory arenas, one per namespace, in which the store keeps
// its copies of put payloads (StoreOptions::payload_allocator), so that a get over shared memory
// hands the client a reference into an arena instead of copying the payload into the client's
// response area (docs/shm.md, "Zero-copy gets").
//
// Each arena is a memfd of `arena_bytes` (virtual: pages exist once touched), mapped read-write
// by the daemon and then sealed (F_SEAL_FUTURE_WRITE, SHRINK, GROW, SEAL): a process handed its
// descriptor can map it read-only only, cannot write(2) to it, truncate it or punch holes in it,
// so nothing a client does changes a payload the daemon serves to others.
//
// Invariants:
//   Z1  An arena holds payloads of its one namespace only: Allocate(ns) carves from ns's arena.
//       (The store caches a copy under the namespace it was put in, so a get of namespace N only
//       ever returns memory of N's arena.) Bytes outside live payloads are stale payloads of N.
//   Z2  A range is reused only once the Buffer over it is destroyed, i.e. after every holder —
//       the cache, a borrow, an upload, a client's lease (shm_server_impl.h, Conn::Held) —
//       dropped it.
//   Z3  Locate answers only for a range lying wholly inside one arena.
//
// Memory: the seals also forbid giving pages back (no hole punching), so an arena keeps every
// page it ever touched: at most `arenas_max` x `arena_bytes` resident. Allocation is first fit
// from the low end (RegionAllocator), so a steady workload keeps reusing the same pages; a
// background thread ("wmbt-arena-warm") populates `warm_ahead_bytes` beyond the highest
// allocation ahead of need and reads a byte of each page from user and kernel mode, since
// faulting fresh pages in during a put's copy and journal write costs more than the copy (on a
// VM whose page faults exit to the hypervisor, 5 ms per fresh 2 MiB vs 0.1 warm; docs/shm.md).
// Payloads below `min_payload_bytes` are not placed in arenas (null: the store uses its own
// buffers and a get copies them, which for small payloads costs less than a lease).
//
// Thread-safety: all methods may be called concurrently; Buffers may be destroyed on any thread
// and may outlive the owner's reference (each keeps the arenas alive).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "transport/shm/os.h"
#include "transport/shm/region_allocator.h"
#include "transport/shm/segment_layout.h"
#include "wombatkv/status.h"
#include "wombatkv/store.h"

namespace wombatkv::shm {

struct PayloadArenasOptions {
  uint64_t arena_bytes = 1ull << 30;  // per namespace (WMBT_KV_SHM_ARENA_BYTES)
  size_t arenas_max = 8;              // namespaces with an arena (WMBT_KV_SHM_ARENAS); <= kArenasMax
  size_t min_payload_bytes = 64 << 10;
  // A background thread keeps this much of each arena populated beyond its highest allocation,
  // so a put copies into warm pages instead of faulting fresh ones in (0 = none). Warming costs
  // CPU (on the session-33 VM ~4 ms per MiB, spent once after each burst of large puts: 64 MiB
  // slowed the next quarter second of small gets), and 16 MiB keeps ahead of one client's
  // 64 KiB saves.
  uint64_t warm_ahead_bytes = 16ull << 20;
};

struct PayloadArenasStats {
  uint64_t arenas = 0;
  uint64_t bytes_live = 0;       // allocated and not yet freed (rounded to 64 bytes)
  uint64_t payloads_live = 0;
  uint64_t allocations = 0;
  uint64_t declined = 0;         // payload too small, arena full, or no arena left for its namespace
  uint64_t populated_bytes = 0;  // pages populated ahead of use or on it, over all arenas
};

class PayloadArenas : public PayloadAllocator,
                      public std::enable_shared_from_this<PayloadArenas> {
 public:
  static constexpr size_t kArenasMax = kPayloadArenasMax;

  // InvalidArgument for an arena size that is not a positive multiple of 2 MiB (up to 1 TiB) or
  // an arena count above kArenasMax.
  static Result<std::shared_ptr<PayloadArenas>> Create(PayloadArenasOptions options);
  ~PayloadArenas() override;

  std::shared_ptr<Buffer> Allocate(std::string_view ns, size_t bytes) override;

  struct Location {
    uint32_t arena = 0;  // 1..kArenasMax
    uint64_t offset = 0;
  };
  // Where [data, data + bytes) lies, if wholly inside one arena (Z3). Lock-free.
  std::optional<Location> Locate(const uint8_t* data, size_t bytes) const;
  // The arena's sealed descriptor (to pass to a client) and size. REQUIRES: `arena` was returned
  // by Locate.
  int fd(uint32_t arena) const;
  uint64_t arena_bytes() const { return options_.arena_bytes; }
  // The arena number of `ns`, or 0 when it has none yet.
  uint32_t ArenaOf(std::string_view ns) const;

  PayloadArenasStats Stats() const;

 private:
  explicit PayloadArenas(PayloadArenasOptions options);
  struct Arena;
  // Asks the warm thread (started on first use) to populate arenas up to their warm target.
  void Warm();
  void WarmLoop();
  // Claims the next chunk of `a` to populate, if it is below its target: [*from, *to).
  bool ClaimWarmChunk(Arena& a, uint64_t* from, uint64_t* to);
  // ns's arena, created on first use; null when none is left or it cannot be created.
  Arena* ArenaFor(std::string_view ns);
  void Free(Arena* arena, uint64_t offset, uint64_t bytes);

  const PayloadArenasOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint32_t> by_ns_;  // GUARDED_BY(mu_)
  // Slots 0..count_-1 are filled before count_ is raised (release), and never change after.
  std::array<std::unique_ptr<Arena>, kArenasMax> arenas_;
  std::array<std::atomic<const uint8_t*>, kArenasMax> bases_{};
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> bytes_live_{0}, payloads_live_{0}, allocations_{0}, declined_{0};

  std::mutex warm_mu_;
  std::condition_variable warm_cv_;
  bool warm_wanted_ = false;  // GUARDED_BY(warm_mu_)
  bool warm_stop_ = false;    // GUARDED_BY(warm_mu_)
  std::thread warmer_;        // GUARDED_BY(warm_mu_): started by the first Warm()
};

}  // namespace wombatkv::shm
