// Buffer: an immutable-after-fill byte array shared by reference count. Payloads live in Buffers
// so that a borrow can point into the store's own memory with no copy: the borrow holds a
// reference, and the bytes stay valid until the last reference goes. Usually the Buffer owns heap
// memory (Allocate, CopyOf); Adopt wraps memory owned elsewhere (e.g. a region of a shared-memory
// segment) and runs a release callback instead of freeing it.
//
// Allocation does not zero the bytes (payloads are filled right after). Buffers of 2 MiB and more
// are 2 MiB-aligned and advised for transparent huge pages: filling one then takes one page fault
// per 2 MiB instead of 512. Thread-safety: the reference count is atomic (std::shared_ptr); the
// bytes must not be written once shared.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
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
  static std::shared_ptr<Buffer> Allocate(size_t size);
  static std::shared_ptr<Buffer> CopyOf(ByteView bytes) {
    auto b = Allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(b->data(), bytes.data(), bytes.size());
    return b;
  }

  // Wraps `size` bytes at `data` that the Buffer does not own. When the last reference goes,
  // `release` runs once (on that thread) instead of free(); it must not throw. The memory must
  // stay valid until then.
  static std::shared_ptr<Buffer> Adopt(uint8_t* data, size_t size, std::function<void()> release);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  ByteView view() const { return {data_, size_}; }
  // Shrinks the logical size (e.g. after a short read). REQUIRES: n <= size().
  void Truncate(size_t n) { size_ = n < size_ ? n : size_; }

 private:
  Buffer(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_;  // owned (malloc/aligned_alloc memory, freed with free()) unless release_ is set
  size_t size_;
  std::function<void()> release_;  // set by Adopt: runs instead of free()
};

// A view into a Buffer that keeps it alive.
struct BufferSlice {
  std::shared_ptr<const Buffer> owner;
  const uint8_t* data = nullptr;
  size_t size = 0;
  ByteView view() const { return {data, size}; }
};

}  // namespace wombatkv
