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

// Starts a thread running `body` under `name`: the thread names itself before `body` runs, so
// the threads `body` starts inherit the name (a library's pool, e.g. cpp-httplib's), and is also
// named by its creator before this returns, so the name is in place as soon as the creator goes
// on, whether or not the thread has run yet.
template <class Body>
std::thread StartNamedThread(std::string_view name, Body&& body) {
  std::thread thread([name = std::string(name), body = std::forward<Body>(body)]() mutable {
    NameThisThread(name);
    body();
  });
  NameThread(thread, name);
  return thread;
}

}  // namespace wombatkv
