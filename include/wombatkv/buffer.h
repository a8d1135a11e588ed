// Buffer: an immutable-after-fill heap byte array shared by reference count. Payloads live in
// Buffers so that a borrow can point into the store's own memory with no copy: the borrow holds a
// reference, and the bytes stay valid until the last reference goes.
//
// Allocation does not zero the bytes (payloads are filled right after). Thread-safety: the
// reference count is atomic (std::shared_ptr); the bytes must not be written once shared.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

namespace wombatkv {

using ByteView = std::span<const uint8_t>;

inline ByteView AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline std::string_view AsChars(ByteView b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

class Buffer {
 public:
  static std::shared_ptr<Buffer> Allocate(size_t size) {
    return std::shared_ptr<Buffer>(new Buffer(size));
  }
  static std::shared_ptr<Buffer> CopyOf(ByteView bytes) {
    auto b = Allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(b->data(), bytes.data(), bytes.size());
    return b;
  }

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  ByteView view() const { return {data_.get(), size_}; }
  // Shrinks the logical size (e.g. after a short read). REQUIRES: n <= size().
  void Truncate(size_t n) { size_ = n < size_ ? n : size_; }

 private:
  explicit Buffer(size_t size) : data_(new uint8_t[size ? size : 1]), size_(size) {}
  std::unique_ptr<uint8_t[]> data_;
  size_t size_;
};

// A view into a Buffer that keeps it alive.
struct BufferSlice {
  std::shared_ptr<const Buffer> owner;
  const uint8_t* data = nullptr;
  size_t size = 0;
  ByteView view() const { return {data, size}; }
};

}  // namespace wombatkv
