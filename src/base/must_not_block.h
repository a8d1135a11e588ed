// MustNotBlock: marks the calling thread, for a scope, as one that must not wait out a disk
// sync: a server's event loop running a request whose work is done by completion (a durable
// save on a journaled local L2). Code that would lead such a wait itself (Journal) hands it to
// its own thread instead.
#pragma once

namespace wombatkv {

class MustNotBlock {
 public:
  MustNotBlock() { ++depth(); }
  ~MustNotBlock() { --depth(); }
  MustNotBlock(const MustNotBlock&) = delete;
  MustNotBlock& operator=(const MustNotBlock&) = delete;

  static bool Here() { return depth() > 0; }

 private:
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
};

}  // namespace wombatkv
