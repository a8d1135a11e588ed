// A namespace's eviction lease (docs/capacity.md, "Several hosts with one budget"): hosts that
// share an L2 and a namespace budget each see the whole namespace, but each orders its chains by
// its own uses, so each evicting the excess it sees removed up to one excess per host. The lease
// is one small object in L2 (layout::EvictLeaseKey) naming a holder and a wall-clock expiry; only
// its holder evicts in the namespace, the others wait until it lapses. Taken with a put-if-absent,
// renewed and taken over with a put-if-match on the ETag read, so two hosts never both think they
// took the same version.
//
//   "wombatkv eviction lease v1\nholder <holder>\nexpires_us <wall µs>\n"
//
// A holder is a store's seat: its host, its data directory and the directory's seat mark (the
// data directory's LOCK makes that one process at a time, and a restarted process on it resumes
// its own lease at once; the mark tells apart directories of one path on hosts of one name, such
// as containers sharing the host's name), or, with no data directory, its process and a counter. A
// lease is never released: a holder that stops leaves it to lapse. Hosts' clocks must agree to well
// within the lease's duration (a skew lets two hosts evict at once for that long: the behaviour
// without the lease).
//
// Not thread-safe: the eviction pass (one at a time) owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv {

struct EvictLeaseState {
  std::string holder;
  uint64_t expires_us = 0;
};

std::string EncodeEvictLease(const EvictLeaseState& lease);
// nullopt for anything else (a damaged lease is treated as lapsed: it is replaced).
std::optional<EvictLeaseState> DecodeEvictLease(std::string_view text);

class EvictLease {
 public:
  EvictLease(ObjectStore* l2, Clock* clock, std::string key, std::string holder,
             uint64_t duration_us)
      : l2_(l2),
        clock_(clock),
        key_(std::move(key)),
        holder_(std::move(holder)),
        duration_us_(duration_us) {}

  // Whether this store may evict in the namespace now: it holds the lease, taking it when it is
  // free or lapsed and renewing it once half of it has gone. At most one GET and one PUT; an L2
  // error answers whether the lease held so far is still running.
  bool Hold();

  // Whether the lease Hold() last took or renewed is still running by the clock now (no I/O):
  // asked between the head writes of an eviction pass, which may outlast it.
  bool Running() const { return Still(clock_->WallMicros()); }

  // Whether the last Hold() left this store the holder (its lease may have run out since).
  bool HeldLast() const { return mine_; }

  // Who else holds it, and until when (wall µs), as last read; empty while this store holds it.
  const std::string& other_holder() const { return other_holder_; }
  uint64_t other_until_us() const { return other_until_us_; }

 private:
  bool Still(uint64_t now_us) const { return mine_ && now_us < expires_us_; }

  ObjectStore* const l2_;
  Clock* const clock_;
  const std::string key_;
  const std::string holder_;
  const uint64_t duration_us_;
  bool mine_ = false;
  uint64_t expires_us_ = 0;  // of our lease, by our clock
  std::string other_holder_;
  uint64_t other_until_us_ = 0;  // another host's lease runs until then: not read again before
};

// This store's holder name (see above). `data_dir` may be empty; `seat` is DataDirSeat's.
std::string EvictLeaseHolder(const std::string& data_dir, std::string_view seat);

// The data directory's seat mark, kDataDirSeatFile: written once (synced) with the wall time it was
// made at and a random nonce, then read back by every later open: "seat <wall µs>-<nonce hex>"
// ("seat <wall µs>" for a mark made before there were nonces).
inline constexpr std::string_view kDataDirSeatFile = "SEAT";
Result<std::string> DataDirSeat(FileSystem* fs, Clock* clock, Random* random,
                                const std::string& data_dir);

}  // namespace wombatkv
