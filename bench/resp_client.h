// A minimal blocking Redis (RESP2) client for the peer benchmark: GET and SET of binary values
// over a unix socket or TCP, one request at a time — the same access pattern as our clients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wombatkv::bench {

class RespClient {
 public:
  // "unix:/path/to/sock" or "HOST:PORT". Dies with a message on failure.
  explicit RespClient(const std::string& addr);
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  void Set(const std::string& key, const uint8_t* value, size_t len);
  // Returns the value's length (its bytes are in value()); dies on a miss or error.
  size_t Get(const std::string& key);
  const uint8_t* value() const { return buf_.data() + value_at_; }
  // Sends a command of plain arguments and returns the first reply line (e.g. "+OK").
  std::string Command(const std::vector<std::string>& args);

 private:
  void SendArgs(const std::vector<std::pair<const uint8_t*, size_t>>& args);
  std::string ReadLine();
  void ReadExact(size_t n);

  int fd_ = -1;
  std::vector<uint8_t> buf_;  // received bytes; [head_, tail_) unread
  size_t head_ = 0, tail_ = 0, value_at_ = 0;
  std::string out_;
};

}  // namespace wombatkv::bench
