#include "store/upload_gate.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/check.h"

namespace wombatkv {

UploadGate::UploadGate(Executor* executor, uint64_t parked_bytes_max, size_t pumps_max)
    : executor_(executor), parked_bytes_max_(parked_bytes_max),
      pumps_max_(std::max<size_t>(pumps_max, 1)) {}

void UploadGate::PutBegins() {
  std::lock_guard<std::mutex> g(mu_);
  ++puts_copying_;
}

void UploadGate::PutEnds() {
  bool pump;
  {
    std::lock_guard<std::mutex> g(mu_);
    WMBT_CHECK(puts_copying_ > 0);
    --puts_copying_;
    pump = TakePumpLocked();
  }
  if (pump) executor_->Submit([this] { Pump(); });
}

void UploadGate::Submit(uint64_t id, uint64_t bytes, std::function<void()> upload) {
  std::vector<std::function<void()>> start;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (puts_copying_ == 0) {
      start.push_back(std::move(upload));
    } else {
      parked_.push_back(Parked{id, bytes, std::move(upload)});
      by_id_[id].push_back(std::prev(parked_.end()));
      parked_bytes_ += bytes;
      ++parked_total_;
      // Past the bound the oldest parked uploads start (this one too, if it alone is over).
      while (parked_bytes_ > parked_bytes_max_) start.push_back(TakeLocked(parked_.begin()));
    }
  }
  for (auto& u : start) executor_->Submit(std::move(u));
}

void UploadGate::Release(std::span<const uint64_t> ids) {
  std::vector<std::function<void()>> start;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const uint64_t id : ids) {
      auto it = by_id_.find(id);
      if (it == by_id_.end()) continue;
      // TakeLocked erases the entry once its last upload goes: take the iterators first.
      const absl::InlinedVector<ParkedList::iterator, 1> of_id = it->second;
      for (const ParkedList::iterator p : of_id) start.push_back(TakeLocked(p));
    }
  }
  for (auto& u : start) executor_->Submit(std::move(u));
}

void UploadGate::ReleaseAll() {
  ParkedList released;
  {
    std::lock_guard<std::mutex> g(mu_);
    released.swap(parked_);
    by_id_.clear();
    parked_bytes_ = 0;
  }
  for (Parked& p : released) executor_->Submit(std::move(p.upload));
}

UploadGate::Stats UploadGate::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return Stats{parked_total_, parked_.size(), parked_bytes_};
}

bool UploadGate::TakePumpLocked() {
  if (parked_.empty() || puts_copying_ > 0 || pumps_ > 0) return false;
  ++pumps_;
  return true;
}

std::function<void()> UploadGate::TakeLocked(ParkedList::iterator it) {
  auto of_id = by_id_.find(it->id);
  WMBT_CHECK(of_id != by_id_.end());
  auto& list = of_id->second;
  list.erase(std::find(list.begin(), list.end(), it));  // usually its only entry
  if (list.empty()) by_id_.erase(of_id);
  std::function<void()> upload = std::move(it->upload);
  parked_bytes_ -= it->bytes;
  parked_.erase(it);
  return upload;
}

void UploadGate::Pump() {
  for (;;) {
    std::function<void()> upload;
    bool another = false;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (parked_.empty() || puts_copying_ > 0) {
        --pumps_;
        return;
      }
      upload = TakeLocked(parked_.begin());
      // More work than this pump: let another thread share it.
      if (!parked_.empty() && pumps_ < pumps_max_) {
        ++pumps_;
        another = true;
      }
    }
    if (another) executor_->Submit([this] { Pump(); });
    upload();
  }
}

}  // namespace wombatkv
