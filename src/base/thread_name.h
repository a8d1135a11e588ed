// Thread names: what `top -H`, `ps -L`, perf and gdb show for a thread. WombatKV names every
// thread it starts "wmbt-<role>" (docs/daemon.md, "Threads"), in the daemon and in an engine
// that links the library alike.
#pragma once

#include <string>
#include <string_view>

namespace wombatkv {

// Names the calling thread; Linux keeps the first 15 bytes. Best effort: errors are ignored.
void NameThisThread(std::string_view name);
// The calling thread's name ("" if unknown).
std::string ThisThreadName();

}  // namespace wombatkv
