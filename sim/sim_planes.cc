#include "sim/sim_planes.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "meta/rocksdb_test_hooks.h"

namespace wombatkv::sim {
namespace {

// Page tokens of a lagging listing: the last key returned, after this marker.
constexpr std::string_view kLagToken = "\x01lag:";

bool IsHeadKey(std::string_view key) { return key.find("/wombatkv/v1/chain/") != key.npos; }

}  // namespace

std::string ShortObjectKey(std::string_view key) {
  // "<ns>/blob/0123456789ab…" is enough to tell objects apart in a trace; the namespace is kept,
  // for namespaces share content hashes.
  const size_t v1 = key.find("/wombatkv/v1/");
  if (v1 == key.npos) return std::string(key);
  const size_t slash = v1 == 0 ? key.npos : key.rfind('/', v1 - 1);
  const size_t ns = slash == key.npos ? 0 : slash + 1;
  std::string s(key.substr(ns, v1 - ns));
  s += key.substr(v1 + std::string_view("/wombatkv/v1").size());
  if (s.size() > 48) s = s.substr(0, 48) + "…";
  return s;
}

SimBucket::SimBucket() : truth_(NewMemObjectStore()) {}

bool SimBucket::Corrupt(const std::string& key, uint64_t offset_seed) {
  auto got = truth_->Get(key, 0, kToEnd);
  if (!got.ok() || got->bytes->size() == 0) return false;
  auto bytes = Buffer::CopyOf(got->bytes->view());
  bytes->data()[offset_seed % bytes->size()] ^= static_cast<uint8_t>(1u << (offset_seed >> 32) % 8);
  auto put = truth_->Put(key, {bytes->view()}, PutOptions{});
  if (!put.ok()) return false;
  corrupted_.insert(key);
  ever_corrupted_.insert(key);
  corrupted_this_step_.insert(key);
  return true;
}

void SimBucket::Created(const std::string& key, uint64_t now_us) {
  changes_[key] = Change{now_us, false, {}};
}

void SimBucket::Deleted(const ObjectInfo& gone, uint64_t now_us) {
  changes_[gone.key] = Change{now_us, true, gone};
  deleted_this_step_.insert(gone.key);
}

FaultyObjectStore::FaultyObjectStore(int host, SimBucket* bucket, const FaultRates* rates,
                                     SimRandom* rng, SimClock* clock, Trace* trace,
                                     CrashPoint crash_point)
    : host_(host),
      bucket_(bucket),
      rates_(rates),
      rng_(rng),
      clock_(clock),
      trace_(trace),
      crash_point_(std::move(crash_point)) {}

void FaultyObjectStore::Note(const std::string& what) {
  trace_->Add("h" + std::to_string(host_) + " L2 " + what);
}

Status FaultyObjectStore::Before(const char* op, std::string_view key) {
  timed_out_applied_ = false;
  if (crash_point_(host_, "before L2 request")) {
    Note(std::string("crash before ") + op + " " + ShortObjectKey(key));
    throw HostCrash{host_};
  }
  if (rates_->latency_us_max) clock_->Advance(rng_->Range(0, rates_->latency_us_max));
  if (rates_->brownout && rng_->Chance(0.9)) {
    Note(std::string(op) + " " + ShortObjectKey(key) + " -> 503 (brown-out)");
    return Status::Unavailable("sim: 503 SlowDown (brown-out)");
  }
  if (rng_->Chance(rates_->unavailable)) {
    Note(std::string(op) + " " + ShortObjectKey(key) + " -> 503");
    return Status::Unavailable("sim: 503 Service Unavailable");
  }
  if (rng_->Chance(rates_->timeout)) {
    clock_->Advance(30'000'000);  // a client-side timeout
    timed_out_applied_ = rng_->Chance(0.5);
    Note(std::string(op) + " " + ShortObjectKey(key) + " -> timeout" +
         (timed_out_applied_ ? " (applied)" : " (not applied)"));
    if (!timed_out_applied_) return Status::Unavailable("sim: request timed out");
  }
  return Status::Ok();
}

Status FaultyObjectStore::AfterWrite(const char* op, std::string_view key) {
  if (timed_out_applied_) return Status::Unavailable("sim: request timed out");
  if (rng_->Chance(rates_->lost_response)) {
    Note(std::string(op) + " " + ShortObjectKey(key) + " applied, response lost -> 503");
    return Status::Unavailable("sim: response lost after the write was applied");
  }
  if (crash_point_(host_, "after L2 write")) {
    Note(std::string("crash after ") + op + " " + ShortObjectKey(key) + " applied");
    throw HostCrash{host_};
  }
  return Status::Ok();
}

Result<std::string> FaultyObjectStore::Put(std::string_view key,
                                           const std::vector<ByteView>& parts,
                                           const PutOptions& options) {
  WMBT_RETURN_IF_ERROR(Before("put", key));
  const bool existed = bucket_->truth()->Head(key).ok();
  auto put = bucket_->truth()->Put(key, parts, options);
  if (!put.ok()) {
    if (timed_out_applied_) return Status::Unavailable("sim: request timed out");
    return put.status();
  }
  bucket_->Rewritten(std::string(key));
  if (!existed) bucket_->Created(std::string(key), clock_->NowMicros());
  if (IsHeadKey(key) && bucket_->on_head_written) bucket_->on_head_written(std::string(key));
  WMBT_RETURN_IF_ERROR(AfterWrite("put", key));
  return put;
}

Result<ObjectData> FaultyObjectStore::Get(std::string_view key, uint64_t offset,
                                          uint64_t length) {
  WMBT_RETURN_IF_ERROR(Before("get", key));
  if (timed_out_applied_) return Status::Unavailable("sim: request timed out");
  return bucket_->truth()->Get(key, offset, length);
}

Result<ObjectInfo> FaultyObjectStore::Head(std::string_view key) {
  WMBT_RETURN_IF_ERROR(Before("head", key));
  if (timed_out_applied_) return Status::Unavailable("sim: request timed out");
  return bucket_->truth()->Head(key);
}

Status FaultyObjectStore::Delete(std::string_view key) {
  WMBT_RETURN_IF_ERROR(Before("delete", key));
  auto gone = bucket_->truth()->Head(key);
  WMBT_RETURN_IF_ERROR(bucket_->truth()->Delete(key));
  if (gone.ok()) bucket_->Deleted(*gone, clock_->NowMicros());
  bucket_->Rewritten(std::string(key));
  if (IsHeadKey(key) && bucket_->on_head_deleted) bucket_->on_head_deleted(std::string(key));
  Note("delete " + ShortObjectKey(key));
  Status s = AfterWrite("delete", key);
  if (!s.ok()) bucket_->DeleteUnanswered(std::string(key));
  return s;
}

Result<ListPage> FaultyObjectStore::List(std::string_view prefix, std::string_view delimiter,
                                         std::string_view token, size_t max_keys) {
  WMBT_RETURN_IF_ERROR(Before("list", prefix));
  if (timed_out_applied_) return Status::Unavailable("sim: request timed out");
  if (max_keys > 1 && rng_->Chance(rates_->short_list)) {
    max_keys = rng_->Range(1, std::min<size_t>(max_keys - 1, 3));  // S3 may return fewer
  }
  if (rates_->list_lag_us > 0 || token.starts_with(kLagToken)) {
    return LaggingList(prefix, delimiter, token, max_keys);
  }
  return bucket_->truth()->List(prefix, delimiter, token, max_keys);
}

Result<ListPage> FaultyObjectStore::LaggingList(std::string_view prefix,
                                                std::string_view delimiter,
                                                std::string_view token, size_t max_keys) {
  // The whole listing from the truth, then the lag applied, then our own pages (tokens carry the
  // last key returned). Each key changed within the lag window is shown as it was before the
  // change with probability 1/2, decided afresh by every request, as a lagging replica would.
  ListPage all;
  std::string t;
  do {
    WMBT_ASSIGN_OR_RETURN(ListPage page, bucket_->truth()->List(prefix, delimiter, t, 1000));
    for (auto& o : page.objects) all.objects.push_back(std::move(o));
    for (auto& p : page.common_prefixes) all.common_prefixes.push_back(std::move(p));
    t = page.next_token;
  } while (!t.empty());
  const uint64_t now = clock_->NowMicros();
  const auto recent = [&](uint64_t at) { return now < at + rates_->list_lag_us; };
  const auto& changes = bucket_->changes();
  // (key, listing entry or a common prefix)
  std::map<std::string, std::optional<ObjectInfo>> shown;
  for (auto& o : all.objects) {
    auto c = changes.find(o.key);
    if (c != changes.end() && !c->second.deleted && recent(c->second.at_us) && rng_->Chance(0.5)) {
      Note("list hides new " + ShortObjectKey(o.key) + " (lag)");
      continue;
    }
    shown.emplace(o.key, std::move(o));
  }
  for (auto& p : all.common_prefixes) shown.emplace(p, std::nullopt);
  for (auto c = changes.lower_bound(std::string(prefix));
       c != changes.end() && c->first.starts_with(prefix); ++c) {
    if (!c->second.deleted || !recent(c->second.at_us)) continue;
    if (!delimiter.empty() && c->first.find(delimiter, prefix.size()) != std::string::npos) {
      continue;  // would only add a common prefix; not modelled
    }
    if (!rng_->Chance(0.5)) continue;
    Note("list shows deleted " + ShortObjectKey(c->first) + " (lag)");
    shown.emplace(c->first, c->second.info);
  }
  ListPage out;
  const std::string after(token.starts_with(kLagToken) ? token.substr(kLagToken.size()) : "");
  for (auto it = after.empty() ? shown.begin() : shown.upper_bound(after); it != shown.end();
       ++it) {
    if (out.objects.size() + out.common_prefixes.size() == std::max<size_t>(max_keys, 1)) {
      out.next_token = std::string(kLagToken) + std::prev(it)->first;
      break;
    }
    if (it->second) {
      out.objects.push_back(*it->second);
    } else {
      out.common_prefixes.push_back(it->first);
    }
  }
  return out;
}

const char* L1CrashModeName(L1CrashMode m) {
  switch (m) {
    case L1CrashMode::kProcess: return "process";
    case L1CrashMode::kMachineSubset: return "machine(subset)";
    case L1CrashMode::kMachinePrefix: return "machine(prefix)";
    case L1CrashMode::kLost: return "L1-lost";
    case L1CrashMode::kCorrupt: return "L1-corrupt";
  }
  return "?";
}

CrashableMetaStore::CrashableMetaStore(int host, CrashPoint crash_point)
    : host_(host), crash_point_(std::move(crash_point)), live_(NewMemMetaStore()) {}

void CrashableMetaStore::Apply(std::map<std::string, std::string>* m, const Op& op) {
  if (const auto* batch = std::get_if<MetaWriteBatch>(&op)) {
    for (const auto& [k, v] : batch->ops()) {
      if (v) {
        (*m)[k] = *v;
      } else {
        m->erase(k);
      }
    }
    return;
  }
  const std::string& prefix = std::get<std::string>(op);
  for (auto it = m->lower_bound(prefix); it != m->end() && it->first.starts_with(prefix);) {
    it = m->erase(it);
  }
}

Status CrashableMetaStore::Write(const MetaWriteBatch& batch, bool sync) {
  if (crash_point_(host_, "before L1 write")) throw HostCrash{host_};
  WMBT_RETURN_IF_ERROR(live_->Write(batch, sync));
  unsynced_.push_back(batch);
  if (sync) {
    for (const Op& op : unsynced_) Apply(&durable_, op);
    unsynced_.clear();
  }
  if (crash_point_(host_, "after L1 write")) throw HostCrash{host_};
  return Status::Ok();
}

Status CrashableMetaStore::DeletePrefix(std::string_view prefix) {
  if (crash_point_(host_, "before L1 write")) throw HostCrash{host_};
  WMBT_RETURN_IF_ERROR(live_->DeletePrefix(prefix));
  unsynced_.push_back(std::string(prefix));
  return Status::Ok();
}

void CrashableMetaStore::Crash(L1CrashMode mode, SimRandom* rng) {
  if (mode == L1CrashMode::kProcess || mode == L1CrashMode::kCorrupt) {
    if (mode == L1CrashMode::kCorrupt) {
      // Flip a byte of one stored value (below the CRC framing): the store must notice.
      std::vector<std::string> keys;
      Status s = live_->Scan("", [&](std::string_view k, std::string_view) {
        if (corrupt_pending_records || !k.starts_with("P")) keys.emplace_back(k);
        return true;
      });
      if (s.ok() && !keys.empty()) {
        const std::string& k = keys[rng->Uniform(keys.size())];
        auto raw = ReadRawMemValueForTest(live_.get(), k);
        if (raw.ok() && !raw->empty()) {
          std::string bad = *raw;
          bad[rng->Uniform(bad.size())] ^= 0x20;
          WriteRawMemValueForTest(live_.get(), k, bad);
        }
      }
    }
    return;
  }
  std::map<std::string, std::string> kept;
  if (mode != L1CrashMode::kLost) {
    kept = durable_;
    const size_t prefix = rng->Range(0, unsynced_.size());
    for (size_t i = 0; i < unsynced_.size(); ++i) {
      const bool keep = mode == L1CrashMode::kMachinePrefix ? i < prefix : rng->Chance(0.5);
      if (keep) Apply(&kept, unsynced_[i]);
    }
  }
  durable_ = kept;
  unsynced_.clear();
  live_ = NewMemMetaStore();
  MetaWriteBatch all;
  for (const auto& [k, v] : kept) all.Put(k, v);
  Status s = live_->Write(all, /*sync=*/true);
  (void)s;  // an in-memory write cannot fail
}

}  // namespace wombatkv::sim
