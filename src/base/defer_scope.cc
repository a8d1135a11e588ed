#include "base/defer_scope.h"

#include "base/check.h"

namespace wombatkv {
namespace {
thread_local DeferScope* innermost = nullptr;
}  // namespace

DeferScope::DeferScope() : outer_(innermost) { innermost = this; }

void DeferScope::Close() {
  if (state_ != State::kOpen) return;
  WMBT_CHECK_MSG(innermost == this, "a DeferScope closed out of order or on another thread");
  state_ = State::kClosing;
  for (auto& fn : work_) fn();
  work_.clear();
  state_ = State::kClosed;
  innermost = outer_;
}

bool DeferScope::Defer(std::function<void()>&& fn) {
  if (innermost == nullptr || innermost->state_ != State::kOpen) return false;
  innermost->work_.push_back(std::move(fn));
  return true;
}

bool DeferScope::DeferToOpen(std::function<void()>&& fn) {
  DeferScope* scope = innermost;
  while (scope != nullptr && scope->state_ != State::kOpen) scope = scope->outer_;
  if (scope == nullptr) return false;
  scope->work_.push_back(std::move(fn));
  return true;
}

const DeferScope* DeferScope::Innermost() { return innermost; }

}  // namespace wombatkv
