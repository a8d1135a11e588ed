#include "env/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <memory>

namespace wombatkv {
namespace {

struct Shared {
  size_t n = 0;
  const std::function<void(size_t)>* fn = nullptr;  // the caller's: used only while indexes last
  std::atomic<size_t> next{0};
  std::atomic<size_t> left{0};
  Completion all_done;
};

void TakeIndexes(Shared& s) {
  for (size_t i; (i = s.next.fetch_add(1, std::memory_order_relaxed)) < s.n;) {
    (*s.fn)(i);
    if (s.left.fetch_sub(1, std::memory_order_acq_rel) == 1) s.all_done.Set(Status::Ok());
  }
}

}  // namespace

Status ParallelFor(Executor* executor, size_t n, size_t helpers,
                   const std::function<void(size_t)>& fn) {
  if (n == 0) return Status::Ok();
  auto shared = std::make_shared<Shared>();
  shared->n = n;
  shared->fn = &fn;
  shared->left.store(n, std::memory_order_relaxed);
  for (size_t t = 0; t < std::min(helpers, n - 1); ++t) {
    executor->Submit([shared] { TakeIndexes(*shared); });
  }
  TakeIndexes(*shared);
  return executor->Await(shared->all_done);
}

}  // namespace wombatkv
