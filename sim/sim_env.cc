#include "sim/sim_env.h"

#include <algorithm>
#include <cstdio>

namespace wombatkv::sim {

uint64_t SimRandom::Next64() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void SimExecutor::Submit(std::function<void()> task) {
  if (dropped_) return;  // a crashed process queues nothing
  queue_.push_back(std::move(task));
}

bool SimExecutor::RunOne() {
  if (dropped_ || queue_.empty()) return false;
  const size_t i = order_->Uniform(queue_.size());
  std::function<void()> task = std::move(queue_[i]);
  queue_[i] = std::move(queue_.back());
  queue_.pop_back();
  task();  // may throw HostCrash: the task is already out of the queue
  return true;
}

Status SimExecutor::Await(const Completion& c) {
  while (!c.done()) {
    if (!RunOne()) {
      return Status::Internal("sim executor: awaited completion can never finish");
    }
  }
  return Status::Ok();
}

void SimExecutor::Drain() {
  while (RunOne()) {
  }
}

void SimExecutor::DropAll() {
  queue_.clear();
  dropped_ = true;
}

void Trace::Add(std::string event) {
  std::string line = "t=" + std::to_string(clock_->NowMicros()) + "us " + event;
  for (unsigned char ch : line) {
    digest_ ^= ch;
    digest_ *= 1099511628211ull;
  }
  digest_ ^= '\n';
  digest_ *= 1099511628211ull;
  ++count_;
  if (verbose) std::printf("%s\n", line.c_str());
  tail_.push_back(std::move(line));
  if (tail_.size() > keep) tail_.pop_front();
}

std::vector<std::string> Trace::Tail(size_t n) const {
  const size_t from = tail_.size() > n ? tail_.size() - n : 0;
  return {tail_.begin() + static_cast<std::ptrdiff_t>(from), tail_.end()};
}

Status LogicalMtimeFs::WriteFileAtomic(const std::string& path, const std::vector<ByteView>& parts,
                                       bool sync, FileInfo* written) {
  WMBT_RETURN_IF_ERROR(FileSystemWrapper::WriteFileAtomic(path, parts, sync, written));
  mtimes_[path] = ++writes_;
  if (written) written->mtime_ns = writes_;
  return Status::Ok();
}

Result<FileInfo> LogicalMtimeFs::Stat(const std::string& path) {
  WMBT_ASSIGN_OR_RETURN(FileInfo info, FileSystemWrapper::Stat(path));
  auto it = mtimes_.find(path);
  info.mtime_ns = it == mtimes_.end() ? 0 : it->second;
  return info;
}

Result<std::vector<std::string>> LogicalMtimeFs::ListDir(const std::string& path) {
  WMBT_ASSIGN_OR_RETURN(std::vector<std::string> names, FileSystemWrapper::ListDir(path));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace wombatkv::sim
