#include "transport/shm/payload_arenas.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "base/check.h"
#include "base/thread_name.h"

namespace wombatkv::shm {

struct PayloadArenas::Arena {
  uint32_t number = 0;
  std::string ns;
  Fd fd;
  std::unique_ptr<Mapping> map;
  std::mutex mu;
  RegionAllocator alloc;     // GUARDED_BY(mu)
  uint64_t touched_end = 0;  // GUARDED_BY(mu): pages below it were populated (or are being)
  uint64_t high_end = 0;     // GUARDED_BY(mu): the highest end of an allocation so far

  Arena(uint32_t n, std::string name, Fd f, std::unique_ptr<Mapping> m, uint64_t bytes)
      : number(n), ns(std::move(name)), fd(std::move(f)), map(std::move(m)), alloc(bytes) {}
};

namespace {

constexpr uint64_t kArenaAlignBytes = 2u << 20;
constexpr uint64_t kPageBytes = 4096;

// A sealed memfd of `bytes`, mapped read-write here before the seals forbid any new writable
// mapping (the daemon's own stays writable).
Result<std::pair<Fd, std::unique_ptr<Mapping>>> CreateArena(uint32_t number, uint64_t bytes) {
  const std::string name = "wombatkv-arena-" + std::to_string(number);
  Fd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Status::ResourceExhausted("memfd_create: " + ErrnoText(errno));
  if (::fchmod(fd.get(), 0600) != 0 || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    return Status::ResourceExhausted("sizing a payload arena to " + std::to_string(bytes) +
                                     " bytes: " + ErrnoText(errno));
  WMBT_ASSIGN_OR_RETURN(auto map, Mapping::Map(fd.get(), bytes));
  (void)::madvise(map->base(), bytes, MADV_HUGEPAGE);  // advice: shmem huge pages when enabled
  if (::fcntl(fd.get(), F_ADD_SEALS,
              F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return Status::ResourceExhausted("sealing a payload arena: " + ErrnoText(errno));
  return std::make_pair(std::move(fd), std::move(map));
}

// Makes [p, p + bytes) ready for the puts: allocates its pages in one call, then reads a byte
// of each from user space and from the kernel, so that both modes' page tables map them. On a VM
// with shadow page tables each mode faults a page in on its own first access: on the AMD EPYC
// VM of session 33 a 64 KiB copy into populated pages took 121 µs (241 µs unpopulated, 4.4 µs
// once read from user space), and writing those bytes to a file (the journal) took 162 µs
// until the kernel had read them too (16 µs after). `pipe` is a pipe's two ends: writev of one
// byte per page makes the kernel read them. Reads only: an allocation may already be copying a
// payload into these pages.
void PopulateAndMap(uint8_t* p, uint64_t bytes, const std::array<Fd, 2>& pipe) {
  (void)::madvise(p, bytes, MADV_POPULATE_WRITE);
#if defined(__SANITIZE_THREAD__)
  // The reads below may meet a put copying into the same pages (their values are never used);
  // ThreadSanitizer reports each as a race. They only fill page tables: skipped under it.
  return;
#endif
  for (uint64_t off = 0; off < bytes; off += kPageBytes)
    (void)__atomic_load_n(p + off, __ATOMIC_RELAXED);
  if (!pipe[1].valid()) return;
  std::array<iovec, 512> iov;  // one byte of each page: 2 MiB a call, well under a pipe's 64 KiB
  std::array<char, iov.size()> sink;
  for (uint64_t off = 0; off < bytes;) {
    size_t n = 0;
    for (; n < iov.size() && off < bytes; ++n, off += kPageBytes) iov[n] = {p + off, 1};
    const ssize_t wrote = ::writev(pipe[1].get(), iov.data(), static_cast<int>(n));
    if (wrote <= 0) return;
    (void)!::read(pipe[0].get(), sink.data(), static_cast<size_t>(wrote));
  }
}

}  // namespace

Result<std::shared_ptr<PayloadArenas>> PayloadArenas::Create(PayloadArenasOptions options) {
  if (options.arena_bytes == 0 || options.arena_bytes % kArenaAlignBytes != 0 ||
      options.arena_bytes > (1ull << 40))
    return Status::InvalidArgument("a shared payload arena must be a positive multiple of 2 MiB "
                                   "up to 1 TiB, not " + std::to_string(options.arena_bytes) +
                                   " bytes (WMBT_KV_SHM_ARENA_BYTES)");
  if (options.arenas_max > kArenasMax)
    return Status::InvalidArgument("at most " + std::to_string(kArenasMax) +
                                   " shared payload arenas, not " +
                                   std::to_string(options.arenas_max) + " (WMBT_KV_SHM_ARENAS)");
  return std::shared_ptr<PayloadArenas>(new PayloadArenas(options));
}

PayloadArenas::PayloadArenas(PayloadArenasOptions options) : options_(options) {}

PayloadArenas::~PayloadArenas() {
  std::thread warmer;
  {
    std::lock_guard<std::mutex> lk(warm_mu_);
    warm_stop_ = true;
    warmer = std::move(warmer_);
  }
  warm_cv_.notify_all();
  if (warmer.joinable()) warmer.join();
}

void PayloadArenas::Warm() {
  {
    std::lock_guard<std::mutex> lk(warm_mu_);
    warm_wanted_ = true;
    if (!warmer_.joinable() && !warm_stop_)
      warmer_ = StartNamedThread("wmbt-arena-warm", [this] { WarmLoop(); });
  }
  warm_cv_.notify_one();
}

bool PayloadArenas::ClaimWarmChunk(Arena& a, uint64_t* from, uint64_t* to) {
  std::lock_guard<std::mutex> lk(a.mu);
  const uint64_t target = std::min(options_.arena_bytes, a.high_end + options_.warm_ahead_bytes);
  if (a.touched_end >= target) return false;
  *from = a.touched_end;
  *to = std::min(target, *from + kArenaAlignBytes);
  a.touched_end = *to;
  return true;
}

void PayloadArenas::WarmLoop() {
  std::array<Fd, 2> pipe;  // left invalid if pipe2 fails: the kernel then faults pages in itself
  if (int fds[2]; ::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    pipe[0] = Fd(fds[0]);
    pipe[1] = Fd(fds[1]);
  }
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(warm_mu_);
      warm_cv_.wait(lk, [&] { return warm_wanted_ || warm_stop_; });
      if (warm_stop_) return;
      warm_wanted_ = false;
    }
    const size_t n = count_.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
      Arena& a = *arenas_[i];
      // One chunk at a time, outside the arena's lock; an allocation meanwhile in a chunk being
      // populated just faults its pages itself.
      for (uint64_t from = 0, to = 0; ClaimWarmChunk(a, &from, &to);) {
        PopulateAndMap(a.map->base() + from, to - from, pipe);
        std::lock_guard<std::mutex> lk(warm_mu_);
        if (warm_stop_) return;
      }
    }
  }
}

PayloadArenas::Arena* PayloadArenas::ArenaFor(std::string_view ns) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = by_ns_.find(std::string(ns));
  if (it != by_ns_.end()) return arenas_[it->second - 1].get();
  const size_t n = count_.load(std::memory_order_relaxed);
  if (n >= options_.arenas_max) return nullptr;  // later namespaces' gets copy
  const uint32_t number = static_cast<uint32_t>(n + 1);
  auto made = CreateArena(number, options_.arena_bytes);
  if (!made.ok()) return nullptr;
  arenas_[n] = std::make_unique<Arena>(number, std::string(ns), std::move(made->first),
                                       std::move(made->second), options_.arena_bytes);
  bases_[n].store(arenas_[n]->map->base(), std::memory_order_relaxed);
  count_.store(n + 1, std::memory_order_release);  // Locate may see the slot from now on
  by_ns_.emplace(std::string(ns), number);
  return arenas_[n].get();
}

std::shared_ptr<Buffer> PayloadArenas::Allocate(std::string_view ns, size_t bytes) {
  Arena* a = bytes >= options_.min_payload_bytes && bytes > 0 ? ArenaFor(ns) : nullptr;
  std::optional<uint64_t> offset;
  uint64_t populate_from = 0, populate_to = 0;
  bool warm = false;
  if (a) {
    std::lock_guard<std::mutex> lk(a->mu);
    offset = a->alloc.Allocate(bytes);
    if (offset) {
      a->high_end = std::max(a->high_end, *offset + bytes);
      if (a->high_end > a->touched_end) {
        populate_from = a->touched_end;
        populate_to = (a->high_end + kPageBytes - 1) / kPageBytes * kPageBytes;
        a->touched_end = populate_to;
      }
      warm = options_.warm_ahead_bytes > 0 && a->touched_end < options_.arena_bytes &&
             a->touched_end < a->high_end + options_.warm_ahead_bytes / 2;
    }
  }
  if (warm) Warm();
  if (!offset) {
    declined_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  // Fresh pages are allocated in one call instead of one page fault each (on a VM where a fault
  // costs a VM exit, a fresh 2 MiB copy took 8.6 ms faulting and 5 ms populated; warm, 0.1 ms).
  // Outside the lock; a concurrent allocation in the range just faults its pages itself.
  if (populate_to > populate_from)
    (void)::madvise(a->map->base() + populate_from, populate_to - populate_from,
                    MADV_POPULATE_WRITE);
  allocations_.fetch_add(1, std::memory_order_relaxed);
  payloads_live_.fetch_add(1, std::memory_order_relaxed);
  bytes_live_.fetch_add(RegionAllocator::Rounded(bytes), std::memory_order_relaxed);
  // Z2: the range goes back only when the last holder of this Buffer drops it.
  return Buffer::Adopt(a->map->base() + *offset, bytes,
                       [self = shared_from_this(), a, off = *offset, bytes] {
                         self->Free(a, off, bytes);
                       });
}

void PayloadArenas::Free(Arena* a, uint64_t offset, uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lk(a->mu);
    a->alloc.Free(offset, bytes);
  }
  payloads_live_.fetch_sub(1, std::memory_order_relaxed);
  bytes_live_.fetch_sub(RegionAllocator::Rounded(bytes), std::memory_order_relaxed);
}

std::optional<PayloadArenas::Location> PayloadArenas::Locate(const uint8_t* data,
                                                            size_t bytes) const {
  const size_t n = count_.load(std::memory_order_acquire);
  const auto p = reinterpret_cast<uintptr_t>(data);
  for (size_t i = 0; i < n; ++i) {
    const auto base = reinterpret_cast<uintptr_t>(bases_[i].load(std::memory_order_relaxed));
    if (p < base || p - base > options_.arena_bytes || bytes > options_.arena_bytes - (p - base))
      continue;
    return Location{static_cast<uint32_t>(i + 1), p - base};
  }
  return std::nullopt;
}

int PayloadArenas::fd(uint32_t arena) const {
  WMBT_CHECK(arena >= 1 && arena <= count_.load(std::memory_order_acquire));
  return arenas_[arena - 1]->fd.get();
}

uint32_t PayloadArenas::ArenaOf(std::string_view ns) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = by_ns_.find(std::string(ns));
  return it == by_ns_.end() ? 0 : it->second;
}

PayloadArenasStats PayloadArenas::Stats() const {
  PayloadArenasStats s;
  s.arenas = count_.load();
  s.bytes_live = bytes_live_.load();
  s.payloads_live = payloads_live_.load();
  s.allocations = allocations_.load();
  s.declined = declined_.load();
  for (size_t i = 0; i < s.arenas; ++i) {
    std::lock_guard<std::mutex> lk(arenas_[i]->mu);
    s.populated_bytes += arenas_[i]->touched_end;
  }
  return s;
}

}  // namespace wombatkv::shm
