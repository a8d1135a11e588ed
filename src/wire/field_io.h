// FieldWriter / FieldReader: the primitives of the op layouts in codec.h (little-endian integers,
// u16-prefixed strings, fixed-size ids, presence bytes). Internal to src/wire.
//
// FieldReader never reads past its span: every read checks the remaining length first and, on the
// first failure, records an InvalidArgument naming the message and field ("GetChainResponse:
// truncated field blocks[3].hash (needs 20 bytes, 7 left)") and makes every later read fail too.
// Callers read all fields, then call Finish(), which also rejects trailing bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/endian.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::wire {

class FieldWriter {
 public:
  // Most messages' fields fit: one allocation instead of a doubling series.
  FieldWriter() { out_.reserve(kInitialBytes); }
  static constexpr size_t kInitialBytes = 128;

  void U8(uint8_t v) { out_.push_back(v); }
  void U16(uint16_t v) {
    Grow(2, [&](uint8_t* p) { StoreLe16(p, v); });
  }
  void U32(uint32_t v) {
    Grow(4, [&](uint8_t* p) { StoreLe32(p, v); });
  }
  void U64(uint64_t v) {
    Grow(8, [&](uint8_t* p) { StoreLe64(p, v); });
  }
  // REQUIRES: s.size() <= UINT16_MAX (callers validate or truncate before encoding).
  void Str16(std::string_view s) {
    U16(static_cast<uint16_t>(s.size()));
    Raw(s.data(), s.size());
  }
  template <size_t N, typename Tag>
  void Id(const FixedBytes<N, Tag>& v) {
    Raw(v.data(), N);
  }
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  template <typename F>
  void Grow(size_t n, F store) {
    out_.resize(out_.size() + n);
    store(out_.data() + out_.size() - n);
  }
  std::vector<uint8_t> out_;
};

class FieldReader {
 public:
  // `what` names the message in errors ("HelloRequest").
  FieldReader(std::string_view what, const std::vector<uint8_t>& bytes)
      : what_(what), p_(bytes.data()), left_(bytes.size()) {}

  bool U8(std::string_view field, uint8_t* v) {
    if (!Need(field, 1)) return false;
    *v = *p_;
    Skip(1);
    return true;
  }
  bool U16(std::string_view field, uint16_t* v) {
    if (!Need(field, 2)) return false;
    *v = LoadLe16(p_);
    Skip(2);
    return true;
  }
  bool U32(std::string_view field, uint32_t* v) {
    if (!Need(field, 4)) return false;
    *v = LoadLe32(p_);
    Skip(4);
    return true;
  }
  bool U64(std::string_view field, uint64_t* v) {
    if (!Need(field, 8)) return false;
    *v = LoadLe64(p_);
    Skip(8);
    return true;
  }
  // A u16-prefixed string of at most `max` bytes.
  bool Str16(std::string_view field, std::string* v, size_t max = UINT16_MAX) {
    uint16_t n = 0;
    if (!U16(field, &n)) return false;
    if (n > max) {
      return Fail(std::string(field) + " of " + std::to_string(n) + " bytes is over the limit " +
                  std::to_string(max));
    }
    return Bytes(field, n, v);
  }
  // Exactly n raw bytes.
  bool Bytes(std::string_view field, size_t n, std::string* v) {
    if (!Need(field, n)) return false;
    v->assign(reinterpret_cast<const char*>(p_), n);
    Skip(n);
    return true;
  }
  template <size_t N, typename Tag>
  bool Id(std::string_view field, FixedBytes<N, Tag>* v) {
    if (!Need(field, N)) return false;
    *v = FixedBytes<N, Tag>::FromBytes({p_, N});
    Skip(N);
    return true;
  }
  // A 0/1 presence byte.
  bool Presence(std::string_view field, bool* present) {
    uint8_t b = 0;
    if (!U8(field, &b)) return false;
    if (b > 1)
      return Fail("presence byte of " + std::string(field) + " is " + std::to_string(b) +
                  " (must be 0 or 1)");
    *present = b == 1;
    return true;
  }
  // A u32 element count, checked against `max` and against the bytes left (each element needs
  // at least `min_element_bytes`), so a hostile count never makes the caller reserve memory.
  bool Count(std::string_view field, uint32_t* n, size_t max, size_t min_element_bytes) {
    if (!U32(field, n)) return false;
    if (*n > max) {
      return Fail(std::string(field) + " count " + std::to_string(*n) + " is over the limit " +
                  std::to_string(max));
    }
    if (min_element_bytes > 0 && *n > left_ / min_element_bytes) {
      return Fail("truncated field " + std::string(field) + " (" + std::to_string(*n) +
                  " entries need at least " + std::to_string(uint64_t{*n} * min_element_bytes) +
                  " bytes, " + std::to_string(left_) + " left)");
    }
    return true;
  }

  bool Fail(std::string why) {
    if (error_.ok()) error_ = Status::InvalidArgument(std::string(what_) + ": " + why);
    left_ = 0;
    return false;
  }
  bool ok() const { return error_.ok(); }
  size_t left() const { return left_; }

  // The first error, or InvalidArgument if bytes are left over, or OK.
  Status Finish() {
    if (!error_.ok()) return error_;
    if (left_ != 0) {
      return Status::InvalidArgument(std::string(what_) + ": " + std::to_string(left_) +
                                     " trailing bytes after the last field");
    }
    return Status::Ok();
  }

 private:
  bool Need(std::string_view field, size_t n) {
    if (!error_.ok()) return false;
    if (left_ < n) {
      return Fail("truncated field " + std::string(field) + " (needs " + std::to_string(n) +
                  " bytes, " + std::to_string(left_) + " left)");
    }
    return true;
  }
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
  }

  std::string_view what_;
  const uint8_t* p_;
  size_t left_;
  Status error_;
};

}  // namespace wombatkv::wire
