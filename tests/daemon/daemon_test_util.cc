#include "tests/daemon/daemon_test_util.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "transport/tcp/frame_reader.h"
#include "transport/tcp/sockets.h"
#include "transport/tcp/tcp_channel.h"
#include "wire/codec.h"
#include "wire/frame.h"

namespace wombatkv::testing {

std::unique_ptr<DaemonProcess> StartDaemon(const TempDir& dir, std::vector<std::string> extra,
                                           const DaemonProcess::Env& env, const std::string& tcp) {
  std::vector<std::string> args = {"--data-dir", dir.path() + "/data", "--tcp", tcp};
  // Defaults a test may give otherwise in `extra`.
  for (const auto& [flag, value] :
       {std::pair<std::string, std::string>{"--cache-bytes", "64M"}, {"--log-level", "warn"}}) {
    if (std::find(extra.begin(), extra.end(), flag) == extra.end()) {
      args.push_back(flag);
      args.push_back(value);
    }
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<DaemonProcess>(args, env, dir.path() + "/stderr.log");
}

Result<std::unique_ptr<RemoteStore>> OpenRemote(const std::string& addr,
                                                const std::string& token) {
  tcp::TcpClientOptions o;
  o.address = addr;
  o.auth_token = token;
  o.client_name = "daemon-test";
  o.request_timeout_ms = 120'000;
  auto channel = tcp::ConnectTcp(o);
  if (!channel.ok()) return channel.status();
  return std::make_unique<RemoteStore>(std::move(channel).value());
}

BlockKey Key(uint64_t a, uint64_t b) {
  BlockKey k;
  for (int i = 0; i < 8; ++i) {
    k.bytes[i] = static_cast<uint8_t>(a >> (8 * i));
    k.bytes[8 + i] = static_cast<uint8_t>(b >> (8 * i));
  }
  k.bytes[31] = 0x5a;  // never the zero key
  return k;
}

Fingerprint Fp(uint8_t seed) {
  Fingerprint f;
  f.bytes.fill(seed);
  return f;
}

std::string Payload(uint64_t seed, size_t bytes) {
  std::string s(bytes, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

Result<std::vector<BlockKey>> PutAndPublish(Store& store, std::string_view ns,
                                            const Fingerprint& fp, uint64_t chain, size_t n,
                                            size_t payload_bytes) {
  std::vector<BlockKey> keys;
  std::vector<std::string> payloads;
  std::vector<BlockPut> puts;
  for (size_t i = 0; i < n; ++i) {
    keys.push_back(Key(chain, i));
    payloads.push_back(Payload(chain * 1000 + i, payload_bytes));
  }
  for (size_t i = 0; i < n; ++i) {
    BlockPut p;
    p.key = keys[i];
    p.parent = i == 0 ? BlockKey{} : keys[i - 1];
    p.payload = AsBytes(payloads[i]);
    puts.push_back(p);
  }
  auto put = store.PutBlocks(ns, fp, puts);
  if (!put.ok()) return put.status();
  auto published = store.PublishChain(ns, fp, keys.back(), keys.back());
  if (!published.ok()) return published.status();
  return keys;
}

void ExpectChainReadable(Store& store, std::string_view ns, const Fingerprint& fp, uint64_t chain,
                         const std::vector<BlockKey>& keys, size_t payload_bytes) {
  auto found = store.LookupPrefix(ns, fp, keys);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, keys.size()) << "chain " << chain;
  auto got = store.GetBlocks(ns, fp, keys);
  ASSERT_TRUE(got.ok()) << "chain " << chain << ": " << got.status().ToString();
  ASSERT_EQ(got->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    // Compared as a whole, reported briefly (payloads are binary and kilobytes long).
    EXPECT_TRUE(AsChars(got->payload(i)) == Payload(chain * 1000 + i, payload_bytes))
        << "chain " << chain << " block " << i << ": wrong bytes (" << got->payload(i).size()
        << " bytes)";
  }
}

void ExpectServes(const std::string& addr, const std::string& token) {
  static std::atomic<uint64_t> next{900'000};
  auto store = OpenRemote(addr, token);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const uint64_t chain = next.fetch_add(1);
  auto keys = PutAndPublish(**store, "serves", Fp(9), chain, 3, 1000);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ExpectChainReadable(**store, "serves", Fp(9), chain, *keys, 1000);
}

struct RawClient::Reader {
  tcp::FrameReader frames{wire::kDefaultMaxBodyBytes};
};

RawClient::RawClient(const std::string& addr) : reader_(std::make_unique<Reader>()) {
  auto hp = tcp::ParseHostPort(addr, false);
  EXPECT_TRUE(hp.ok()) << hp.status().ToString();
  auto a = tcp::Resolve(*hp, false);
  EXPECT_TRUE(a.ok());
  fd_ = ::socket(a->front().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(fd_, a->front().get(), a->front().length), 0) << addr;
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

void RawClient::Send(const std::vector<uint8_t>& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;  // the daemon may close first; the test checks what it read
    at += static_cast<size_t>(n);
  }
}

void RawClient::Send(const wire::Message& m) { Send(FrameBytes(m)); }

std::optional<wire::Message> RawClient::Read() {
  for (;;) {
    auto m = reader_->frames.Next();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return std::nullopt;
    if (m->has_value()) return std::move(**m);
    auto r = reader_->frames.ReadFrom(fd_);
    if (!r.ok() || *r == tcp::FrameReader::ReadResult::kEof) return std::nullopt;
  }
}

bool RawClient::SeesClose() {
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EINTR)) return true;
  }
}

Status RawClient::Ask(wire::Message m, uint64_t id) {
  m.id = id;
  Send(m);
  auto answer = Read();
  EXPECT_TRUE(answer.has_value()) << "request " << id << ": the connection closed unanswered";
  if (!answer) return Status::Internal("the daemon closed the connection without answering");
  EXPECT_EQ(answer->id, id) << "the answer names the request it answers";
  return wire::ResponseStatus(*answer);
}

std::vector<uint8_t> FrameBytes(const wire::Message& m) {
  auto f = wire::Frame(m);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  std::vector<uint8_t> out;
  for (const iovec& v : f->iov()) {
    auto* p = static_cast<const uint8_t*>(v.iov_base);
    out.insert(out.end(), p, p + v.iov_len);
  }
  return out;
}

double MetricValue(const std::string& page, const std::string& name) {
  const std::string line_start = name + " ";
  for (size_t at = 0; at < page.size();) {
    size_t end = page.find('\n', at);
    if (end == std::string::npos) end = page.size();
    const std::string_view line(page.data() + at, end - at);
    if (line.starts_with(line_start)) return std::stod(std::string(line.substr(line_start.size())));
    at = end + 1;
  }
  return -1;
}

}  // namespace wombatkv::testing
