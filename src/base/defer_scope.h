// DeferScope: work a callback hands to the end of the batch of callbacks it runs in.
//
// A thread that runs a batch of callbacks together (the journal runs one sync round's
// completions: Journal::RunCovered) opens a scope around them. A callback whose work batches
// well across the round — the store's L1 write of a published head: one RocksDB write per round
// instead of one per save — defers the part that can wait, and the scope runs it once the batch
// is through, on the same thread. Without an open scope there is nothing to wait for: Defer
// refuses and the caller does the work at once.
//
//   D1. Deferred work runs in the order it was deferred, when the innermost scope open on the
//       thread at the time closes. While it runs, the scope takes no more: Defer refuses, and
//       what the work starts (a callback's answer may start another save) runs at once.
//   D2. A scope closes on its thread: Close() or its destructor, whichever comes first.
//   D3. DeferToOpen hands work to the innermost scope that is still open, past scopes that are
//       closing: for work that must wait for what a closing scope runs too. The journal opens
//       a scope around each round's scope, so the answers its deferred L1 write leads to can
//       hand their clients' wake-ups over as one batch (docs/shm.md, "Wake-ups").
//
// Not thread-safe by design: a scope belongs to the thread that opened it.
#pragma once

#include <functional>
#include <vector>

namespace wombatkv {

class DeferScope {
 public:
  DeferScope();
  ~DeferScope() { Close(); }
  DeferScope(const DeferScope&) = delete;
  DeferScope& operator=(const DeferScope&) = delete;

  // Runs what was deferred to this scope (D1), then closes it: later Defer calls go to the scope
  // around it, if any.
  void Close();

  // Hands `fn` to the innermost scope of this thread. False (and `fn` untouched) if there is none
  // or it is closing.
  static bool Defer(std::function<void()>&& fn);
  // As Defer, to the innermost scope still open (D3). False (and `fn` untouched) if none is.
  static bool DeferToOpen(std::function<void()>&& fn);
  // The innermost scope of this thread (null if none): for a caller that gathers work per scope.
  static const DeferScope* Innermost();

 private:
  enum class State { kOpen, kClosing, kClosed };
  DeferScope* const outer_;
  State state_ = State::kOpen;
  std::vector<std::function<void()>> work_;
};

}  // namespace wombatkv
