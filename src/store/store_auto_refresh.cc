// Automatic refresh (StoreOptions::refresh_interval_ms, WMBT_KV_REFRESH_INTERVAL; SPEC G11): what
// other hosts publish to the same L2 becomes visible here within about the interval plus one
// refresh's duration, without a Refresh() call. StoreStats::refresh_staleness_us measures how
// stale the view is at any moment: the age of the last completed refresh's start.
//
// Scheduling follows eviction's (store_evict.cc): a store with its own executor and the real clock
// has a timer thread; with an injected executor or clock (tests, the simulator) puts and gets
// start a refresh on the executor once the interval has passed, so a simulated clock drives it.
//
// Without an interval, the holder of a namespace's eviction lease still loads that namespace
// before its eviction passes (RefreshLeasedNamespaces), since it evicts for every host.
#include <mutex>
#include <string>
#include <vector>

#include "store/store_impl.h"

namespace wombatkv {

void StoreImpl::MaybeScheduleRefresh() {
  if (options_.refresh_interval_ms == 0 || refresh_thread_ != nullptr ||
      evict_stopped_.load(std::memory_order_relaxed)) {
    return;
  }
  const uint64_t now = clock_->NowMicros();
  if (now < next_refresh_us_.load(std::memory_order_relaxed)) return;
  if (refresh_queued_.exchange(true)) return;
  next_refresh_us_.store(now + options_.refresh_interval_ms * 1000, std::memory_order_relaxed);
  executor_->Submit([this] {
    AutoRefresh();
    refresh_queued_ = false;
  });
}

namespace {
thread_local const StoreImpl* refreshing_here = nullptr;
}  // namespace

StoreImpl::RefreshingHere::RefreshingHere(const StoreImpl* store) : previous_(refreshing_here) {
  refreshing_here = store;
}
StoreImpl::RefreshingHere::~RefreshingHere() { refreshing_here = previous_; }
bool StoreImpl::RefreshingHere::In(const StoreImpl* store) { return refreshing_here == store; }

void StoreImpl::AutoRefresh() {
  // Run inline by this thread's own Refresh() while it waits (an executor may run queued tasks in
  // Await): that refresh, under way, loads what this one would — and refresh_mu_ is this thread's.
  // On another thread it waits for the refresh under way and then runs, so that what was
  // published after that one listed is loaded within the interval.
  if (evict_stopped_.load() || RefreshingHere::In(this)) return;
  auto report = Refresh();
  if (report.ok()) {
    if (const std::string changes = ChangesText(*report); !changes.empty()) {
      Log(LogLevel::kDebug, "refreshed from L2: " + changes);
    }
    return;
  }
  if (std::string note; refresh_warnings_.Take(clock_->NowMicros(), &note)) {
    Log(LogLevel::kWarn, "automatic refresh from L2 (" + l2_->Describe() +
                             ") failed: " + report.status().ToString() +
                             "; chains other hosts publish are not seen here until one succeeds "
                             "(tried again every " +
                             std::to_string(options_.refresh_interval_ms) + " ms)" + note);
  }
}

std::string StoreImpl::ChangesText(const RefreshReport& r) {
  if (r.chains_added + r.chains_updated + r.chains_removed == 0) return "";
  return std::to_string(r.chains_added) + " added, " + std::to_string(r.chains_updated) +
         " updated, " + std::to_string(r.chains_removed) + " removed";
}

void StoreImpl::RefreshLeasedNamespaces() {
  if (!options_.object_store || options_.eviction_lease_ms == 0 ||
      options_.refresh_interval_ms > 0 || RefreshingHere::In(this)) {
    return;
  }
  const uint64_t now = clock_->NowMicros();
  if (now < next_leased_refresh_us_.load(std::memory_order_relaxed)) return;
  std::vector<std::string> held;
  {
    std::lock_guard<std::mutex> pass(evict_mu_);
    for (const auto& [ns, lease] : evict_leases_) {
      if (lease->HeldLast()) held.push_back(ns);
    }
  }
  if (held.empty()) return;
  next_leased_refresh_us_.store(now + options_.eviction_lease_ms * 1000 / 2,
                                std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(refresh_mu_);
  const RefreshingHere here(this);
  for (const std::string& ns : held) {
    RefreshReport report;
    const Status s = RefreshNamespace(ns, &report);
    if (s.ok()) {
      if (const std::string changes = ChangesText(report); !changes.empty()) {
        Log(LogLevel::kDebug, "namespace " + ns +
                                  " (this store holds its eviction lease) refreshed from L2 "
                                  "before evicting: " +
                                  changes);
      }
    } else if (std::string note; refresh_warnings_.Take(clock_->NowMicros(), &note)) {
      Log(LogLevel::kWarn, "loading namespace " + ns + " from L2 (" + l2_->Describe() +
                               ") before evicting in it failed: " + s.ToString() +
                               "; this pass evicts from what this store saw before" + note);
    }
  }
}

}  // namespace wombatkv
