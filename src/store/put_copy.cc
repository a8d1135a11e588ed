#include "store/put_copy.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace wombatkv {
namespace {

struct CopyJob {
  std::span<const BlockPut> blocks;
  CopyTarget target;
  CopiedBlocks out;
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  size_t finished = 0;  // GUARDED_BY(mu)

  void One(size_t i) {
    const BlockPut& b = blocks[i];
    if (b.owned.owner) {
      out.payloads[i] = b.owned;
      out.hashes[i] = HashPayload(b.owned.view());
    } else {
      auto buf = target.Allocate(b.payload.size());
      out.hashes[i] = CopyAndHashPayload(b.payload, buf->data());
      out.payloads[i] = BufferSlice{buf, buf->data(), buf->size()};
    }
  }

  // Takes blocks until none is left.
  void Work(bool helper) {
    size_t done = 0;
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < blocks.size();) {
      One(i);
      ++done;
    }
    if (done == 0) return;
    std::lock_guard<std::mutex> g(mu);
    finished += done;
    if (helper) out.helped += done;
    if (finished == blocks.size()) cv.notify_all();
  }
};

}  // namespace

std::shared_ptr<Buffer> CopyTarget::Allocate(size_t bytes) const {
  if (shared) {
    if (auto b = shared->Allocate(ns, bytes)) return b;
  }
  return pool->Allocate(bytes);
}

bool IsLargePut(std::span<const BlockPut> blocks) {
  uint64_t total = 0;
  for (const BlockPut& b : blocks) total += b.bytes().size();
  return total >= kLargePutBytes;
}

CopiedBlocks CopyAndHashBlocks(std::span<const BlockPut> blocks, const CopyTarget& target,
                               Executor* helper) {
  const bool share = helper && blocks.size() >= 2 && IsLargePut(blocks);
  auto job = share ? std::make_shared<CopyJob>() : nullptr;
  CopyJob alone;  // a put this thread does by itself needs no shared state
  CopyJob& j = share ? *job : alone;
  j.blocks = blocks;
  j.target = target;
  j.out.payloads.resize(blocks.size());
  j.out.hashes.resize(blocks.size());
  if (share) helper->Submit([job] { job->Work(/*helper=*/true); });
  j.Work(/*helper=*/false);
  if (!share) return std::move(j.out);
  {
    std::unique_lock<std::mutex> g(job->mu);
    job->cv.wait(g, [&] { return job->finished == blocks.size(); });
  }
  return std::move(job->out);
}

}  // namespace wombatkv
