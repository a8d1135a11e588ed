// Thread names: what `top -H`, `ps -L`, perf and gdb show for a thread. WombatKV names every
// thread it starts "wmbt-<role>" (docs/daemon.md, "Threads"), in the daemon and in an engine
// that links the library alike.
#pragma once

#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace wombatkv {

// Names the calling thread; Linux keeps the first 15 bytes. Best effort: errors are ignored.
void NameThisThread(std::string_view name);
// The calling thread's name ("" if unknown).
std::string ThisThreadName();
// Names `thread` from outside it. Best effort, like NameThisThread.
void NameThread(std::thread& thread, std::string_view name);

// Starts a thread running `body` and names it before returning, so that the name is in place
// as soon as its creator goes on (a thread naming itself may not have run yet when someone
// looks: until then it shows its creator's name).
template <class Body>
std::thread StartNamedThread(std::string_view name, Body&& body) {
  std::thread thread(std::forward<Body>(body));
  NameThread(thread, name);
  return thread;
}

}  // namespace wombatkv
