// The client side of the same-host shared-memory transport (design: docs/shm.md).
//
// ConnectShm attaches to the wombatkvd serving `prefix`: it connects to the daemon's control
// socket, checks that the daemon runs as this user or root (SO_PEERCRED: data is never sent to a
// socket someone else planted), receives its own segment and maps it. Calls then travel through
// the segment's rings; request payloads are copied once into the request area. A response's
// payloads lie in the response area or in one of the daemon's payload arenas, mapped read-only
// (docs/shm.md, "Zero-copy gets"), and the returned Message's payload slices point there (zero
// copy): each response goes back to the daemon when the last slice referring to it is destroyed
// (e.g. wmbt_kv_release_borrow), from whatever thread, even after the channel is gone (a borrow
// of arena payloads keeps the control socket open until then, so the daemon keeps them).
//
// Failure handling: a monitor thread watches the control socket; when the daemon goes away (exit,
// crash, SIGKILL, Stop) every call in flight returns Unavailable at once, and the next call
// attaches again (to a restarted daemon) by itself. Borrows of the old segment stay valid. A
// daemon that is there but does not answer (stopped, wedged) is treated the same way once a call
// has waited request_timeout_ms: the attachment is given up (every call in flight fails with
// Unavailable) and the next call attaches again.
//
// Thread-safety: the Channel is thread-safe; calls from many threads are in flight together (up
// to the ring's slot count; more wait) and their responses are matched by id.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "client/channel.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"

namespace wombatkv {

struct ShmClientOptions {
  // The daemon's prefix (WMBT_KV_REMOTE_PREFIX): 1..64 of [A-Za-z0-9._-].
  std::string prefix;
  // Directory of the control socket; empty = $WMBT_KV_RUN_DIR, else /tmp.
  std::string run_dir;
  // WMBT_KV_SHM_GROUP: also attach to a daemon run by a member of this group (name or number),
  // not only to one run by this user or root. Empty = none.
  std::string group;
  // How long to wait for the daemon's answer to an attach and its Hello (a wedged daemon is
  // Unavailable); at most request_timeout_ms, when that is set.
  uint32_t attach_timeout_ms = 5000;
  // How long a call waits for its answer (WMBT_KV_REQUEST_TIMEOUT_MS); then it and every other
  // call in flight fail with Unavailable, noticed within a quarter of this (at most a minute)
  // later. 0 = wait for ever.
  uint32_t request_timeout_ms = 300'000;
  // Sent in the Hello that opens each attachment, for the daemon's logs; empty = "pid N".
  std::string client_name;
  // Whether a waiting caller spins, yields and polls for its response before it sleeps
  // (docs/shm.md, "Wake-ups"; WMBT_KV_CLIENT_POLL). false = sleep at once.
  bool poll = true;
  // Times the yields between a waiter's spin and its sleep (docs/shm.md, "Wake-ups") and the
  // request deadline. Must outlive the channel.
  Clock* clock = nullptr;  // null = RealClock()
};

// How long an attach waits for the daemon: attach_timeout_ms, or request_timeout_ms if shorter.
uint32_t AttachTimeoutMs(const ShmClientOptions& options);

// Attaches now. Unavailable when no daemon serves the prefix (naming how to start one);
// PermissionDenied when the daemon runs as a user this process may not share memory with, or
// refuses it; FailedPrecondition when it speaks another segment layout version; InvalidArgument
// for a bad prefix or an unknown group.
Result<std::unique_ptr<Channel>> ConnectShm(const ShmClientOptions& options);

}  // namespace wombatkv
