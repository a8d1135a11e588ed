// The one table that maps a Store Code to what a C ABI function returns (include/wombatkv.h).
// capi_status_map_test pins every row; change a row only together with the header's contract.
//
// Three kinds of C functions:
//   kPlain    0 = done, -1 = error                 (lookup, put, put_raw_tail, refresh, ...)
//   kRead     1 = hit,  0 = miss, -1 = error       (get_*_borrowed)
//   kPublish  0 = done, 1 = CAS conflict, -1 = error (publish_chain)
// A -1 always comes with a last_error message; a miss or a conflict is an answer, not an error,
// and leaves none.
#pragma once

#include <cstdint>

#include "wombatkv/status.h"

namespace wombatkv::capi {

enum class CallKind : uint8_t { kPlain, kRead, kPublish };

struct CReturns {
  Code code;
  int32_t plain;
  int32_t read;
  int32_t publish;
};

inline constexpr CReturns kStatusToC[] = {
    //  code                        plain  read  publish
    {Code::kOk,                      0,     1,    0},
    {Code::kNotFound,               -1,     0,   -1},  // a miss is only an answer for reads
    {Code::kUnavailable,            -1,    -1,   -1},
    {Code::kConflict,               -1,    -1,    1},  // CAS lost: the caller rebases
    {Code::kInvalidArgument,        -1,    -1,   -1},
    {Code::kCorruption,             -1,    -1,   -1},  // never served as a hit or a miss
    {Code::kResourceExhausted,      -1,    -1,   -1},
    {Code::kFailedPrecondition,     -1,    -1,   -1},
    {Code::kInternal,               -1,    -1,   -1},
    {Code::kPermissionDenied,       -1,    -1,   -1},  // daemon refused the auth token
};

// The C return for `code` in a function of `kind`; -1 for a code missing from the table.
constexpr int32_t CReturnFor(Code code, CallKind kind) {
  for (const CReturns& row : kStatusToC) {
    if (row.code != code) continue;
    switch (kind) {
      case CallKind::kPlain: return row.plain;
      case CallKind::kRead: return row.read;
      case CallKind::kPublish: return row.publish;
    }
  }
  return -1;
}

static_assert(CReturnFor(Code::kOk, CallKind::kRead) == 1);
static_assert(CReturnFor(Code::kNotFound, CallKind::kRead) == 0);
static_assert(CReturnFor(Code::kConflict, CallKind::kPublish) == 1);

}  // namespace wombatkv::capi
