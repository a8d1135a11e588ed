// Who holds a data directory: the note a store writes into <data_dir>/LOCK when it takes it
// ("pid 4242 (wombatkvd) on host h1"), and the reading of that note in the error a second opener
// gets (".../LOCK is locked by pid 4242 (wombatkvd) on host h1"). One place for both, so that
// the callers that act on the holder's program (wombatkvd: "reach it through the daemon"; the
// CLI: "wait for another wombatkv command") keep matching what is written.
#pragma once

#include <string>
#include <string_view>

namespace wombatkv {

// Names this process in the notes it writes from now on, whatever its executable is called, so
// that a copy or link of `wombatkv` under another name is still known as a wombatkv command.
// The tools call it first thing in main, before any thread starts.
void SetOwnerProgram(std::string_view program);

// This process's note, naming `program` (default: SetOwnerProgram's, else this executable's
// short name).
std::string DataDirOwnerNote(std::string_view program = {});

// Whether `message` (a "data directory ... is in use" error) names a holder running `program`
// (and not in a stale note).
bool HeldByProgram(std::string_view message, std::string_view program);

// Whether the note in `message` names a process of this host that is not running: a note left by
// a holder that has exited (its lock went with it, the note stays), so whatever holds the lock
// now wrote none (a program that is not WombatKV's).
bool NoteIsStale(std::string_view message);

}  // namespace wombatkv
