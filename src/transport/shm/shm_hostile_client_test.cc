// A hostile client of the shared-memory transport, against a real Store and Service: it maps its
// own segment (as any client may: the memfd is its own) and writes what it likes there, at any
// moment. Nothing it does may corrupt the store or change what other clients are served
// (docs/shm.md, "Failure handling": "client rewrites its own request payload during the call").
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "transport/shm/os.h"
#include "transport/shm/ring.h"
#include "transport/shm/segment_layout.h"
#include "transport/shm/shm_served_store.h"
#include "wire/codec.h"

namespace wombatkv::testing {
namespace {

constexpr uint64_t kWaitMicros = 20'000'000;  // a bound for waits, never reached

// An L2 that runs a hook before each put of a key containing `infix`, with the parts it is given.
class HookedObjectStore : public ObjectStoreWrapper {
 public:
  using ObjectStoreWrapper::ObjectStoreWrapper;
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (key.find(infix_) != std::string_view::npos) hook = std::move(hook_);
    }
    if (hook) hook();
    return ObjectStoreWrapper::Put(key, parts, options);
  }
  // Runs `hook` once, at the next put of a key containing `infix`.
  void OnceBeforePut(std::string infix, std::function<void()> hook) {
    std::lock_guard<std::mutex> lk(mu_);
    infix_ = std::move(infix);
    hook_ = std::move(hook);
  }

 private:
  std::mutex mu_;
  std::string infix_ = "\x01";  // GUARDED_BY(mu_)
  std::function<void()> hook_;  // GUARDED_BY(mu_)
};

// A client that attaches through the control socket and drives its rings by hand.
class RawClient {
 public:
  explicit RawClient(const std::string& socket_path) {
    auto sock = shm::ConnectControlSocket(socket_path);
    EXPECT_TRUE(sock.ok()) << sock.status().ToString();
    if (!sock.ok()) return;
    sock_ = std::move(*sock);
    shm::AttachReply reply{};
    shm::Fd fd;
    auto got = shm::ReceiveWithFd(sock_.get(), &reply, sizeof reply, &fd);
    EXPECT_TRUE(got.ok() && reply.code == 0);
    auto map = shm::Mapping::Map(fd.get(), reply.segment_bytes);
    EXPECT_TRUE(map.ok());
    if (!map.ok()) return;
    map_ = std::move(*map);
    auto layout = shm::ReadLayout(map_->base(), map_->bytes());
    EXPECT_TRUE(layout.ok());
    if (!layout.ok()) return;
    layout_ = *layout;
    uint8_t* base = map_->base();
    req_ = shm::Ring(reinterpret_cast<shm::RingControl*>(base + layout_.request_ring_control),
                     base + layout_.request_slots, layout_.params.slot_count,
                     layout_.params.slot_bytes);
    resp_ = shm::Ring(reinterpret_cast<shm::RingControl*>(base + layout_.response_ring_control),
                      base + layout_.response_slots, layout_.params.slot_count,
                      layout_.params.slot_bytes);
  }
  bool ok() const { return map_ != nullptr; }
  uint8_t* req_area() const { return map_->base() + layout_.request_area; }
  int sock() const { return sock_.get(); }
  uint8_t* base() const { return map_->base(); }
  const shm::Layout& layout() const { return layout_; }
  shm::Ring& req() { return req_; }
  shm::Ring& resp() { return resp_; }
  // Whether the daemon hung up on this client.
  bool HungUp() const {
    pollfd p{sock_.get(), POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR));
  }

  // Lays `m` out at the start of the request area, publishes it and rings the doorbell.
  void Send(wire::Message m) {
    m.id = next_id_++;
    const shm::MessagePlan plan = shm::PlanMessage(m, req_.slot_bytes());
    shm::WriteRegion(m, plan, req_area(), 0);
    shm::WriteSlot(req_.slot(tail_), m, plan, 0);
    tail_++;
    req_.tail().store(tail_, std::memory_order_release);
    const char bell = 1;
    (void)::send(sock_.get(), &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  // The next response (copied out of the ring), or an error when none came within the bound.
  Result<shm::SlotMessage> Receive() {
    const uint64_t deadline = RealClock()->NowMicros() + kWaitMicros;
    while (resp_.tail().load(std::memory_order_acquire) == head_) {
      if (RealClock()->NowMicros() > deadline) return Status::Unavailable("no response");
      ::sched_yield();
    }
    auto m =
        shm::ReadSlot(resp_.slot(head_), resp_.slot_bytes(), map_->base() + layout_.response_area,
                      layout_.params.response_area_bytes, shm::kPayloadArenasMax);
    head_++;
    resp_.head().store(head_, std::memory_order_release);
    return m;
  }

 private:
  shm::Fd sock_;
  std::unique_ptr<shm::Mapping> map_;
  shm::Layout layout_;
  shm::Ring req_, resp_;
  uint32_t tail_ = 0, head_ = 0;
  uint64_t next_id_ = 1;
};

class HostileShmClient : public ServedShmStore {
 protected:
  void SetUp() override {
    l2_.set(h_.mem_l2());
    Serve({"hostile", 16 << 20, 2 << 20, 4 << 20, 2,
           [this](StoreOptions& o) { o.object_store = &l2_; }});
  }

  struct Wrapper : HookedObjectStore {
    void set(ObjectStore* t) { set_target(t); }
  };

  Wrapper l2_;
  Fingerprint fp_ = Fp(7);
};

// The daemon reads a PutSidecar's bytes where the client put them, in the client's request area.
// A client rewriting them while the store writes the sidecar (here: exactly between the store's
// hash of the bytes and its write to L2, which a client racing the daemon hits now and then) must
// change at most what it stored, never leave a sidecar whose bytes do not hash to its envelope's
// hash: every later reader of that chain's sidecar — any client — would get Corruption.
TEST_F(HostileShmClient, RewritingASidecarDuringItsPutCannotStoreACorruptSidecar) {
  RawClient raw(server_->socket_path());
  ASSERT_TRUE(raw.ok());
  const std::string original(4096, 'o');
  const BlockKey tip = Key(42);

  wire::PutSidecarRequest put;
  put.ns = "tenant";
  put.fp = fp_;
  put.tip = tip;
  put.bytes =
      BufferSlice{nullptr, reinterpret_cast<const uint8_t*>(original.data()), original.size()};
  // The payload lies at the start of the request area (inline body, no spill): the client
  // rewrites it in place, in its own mapping, while the daemon is inside the put.
  l2_.OnceBeforePut("/sidecar/",
                    [&raw, n = original.size()] { std::memset(raw.req_area(), 'X', n); });
  raw.Send(put.Encode());
  auto answer = raw.Receive();
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  ASSERT_TRUE(answer->error.ok()) << answer->error.ToString();

  // Any other client reading that sidecar: either version of the bytes is fine, an error is not.
  auto got = store_->GetSidecar("tenant", fp_, tip);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const std::string bytes(reinterpret_cast<const char*>(got->data), got->size);
  EXPECT_TRUE(bytes == original || bytes == std::string(original.size(), 'X'));
  EXPECT_EQ(store_->Stats().corruptions_detected, 0u);
}

// A client scribbling over every part of its segment the daemon reads — ring counters, slots,
// spilled bodies, payload tables, release tokens, wake words — at random, between and during its
// own requests (it is re-attached whenever the daemon hangs up on it), while another client saves
// and reads blocks. The daemon must stay up and serve the other client exactly its bytes.
TEST_F(HostileShmClient, ScribblingOverItsOwnSegmentNeverHarmsAnotherClient) {
  const std::unique_ptr<Store> good = Client();
  ASSERT_TRUE(good);
  const TestChain chain = MakeChain(4, 80 << 10);
  ASSERT_TRUE(good->SaveChain("good", fp_, chain.Puts()).ok());

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::thread reader([&] {
    while (!stop.load() || reads.load() == 0) {
      auto got = good->GetBlocks("good", fp_, chain.keys);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(got->size(), chain.keys.size());
      for (size_t i = 0; i < chain.keys.size(); ++i) {
        const ByteView b = got->slices()[i].view();
        ASSERT_TRUE(
            std::equal(b.begin(), b.end(), chain.payloads[i].begin(), chain.payloads[i].end()))
            << "block " << i;
      }
      reads++;
    }
  });

  // WMBT_TEST_SEED / WMBT_TEST_ROUNDS explore further than the default run.
  const char* seed_env = std::getenv("WMBT_TEST_SEED");
  const char* rounds_env = std::getenv("WMBT_TEST_ROUNDS");
  std::mt19937_64 rng(seed_env ? std::strtoull(seed_env, nullptr, 10) : 12345);
  const int rounds = rounds_env ? std::atoi(rounds_env) : 20000;
  auto below = [&](uint64_t n) { return n ? rng() % n : 0; };
  auto raw = std::make_unique<RawClient>(server_->socket_path());
  ASSERT_TRUE(raw->ok());
  uint32_t tail = 0;
  for (int round = 0; round < rounds; ++round) {
    if (raw->HungUp()) {
      raw = std::make_unique<RawClient>(server_->socket_path());
      ASSERT_TRUE(raw->ok());
      tail = 0;
    }
    const shm::Layout& l = raw->layout();
    uint8_t* base = raw->base();
    const uint64_t area = l.params.request_area_bytes;
    switch (below(8)) {
      case 0: {  // a random word anywhere the daemon may read, header and ring controls included
        const uint64_t at = below(l.request_area / 4) * 4;
        const uint32_t v = static_cast<uint32_t>(rng());
        std::memcpy(base + at, &v, sizeof v);
        break;
      }
      case 1: {  // a counter nudged a little (more plausible than a random one)
        uint32_t* words[] = {
            &reinterpret_cast<shm::RingControl*>(base + l.request_ring_control)->tail,
            &reinterpret_cast<shm::RingControl*>(base + l.response_ring_control)->head,
            &reinterpret_cast<shm::RingControl*>(base + l.release_ring_control)->tail};
        uint32_t* w = words[below(3)];
        __atomic_store_n(w,
                         __atomic_load_n(w, __ATOMIC_RELAXED) + static_cast<uint32_t>(below(5)) - 2,
                         __ATOMIC_RELEASE);
        break;
      }
      case 2:
      case 3:
      case 4: {  // a request of a random op with random fields, payloads and spill
        shm::SlotHeader h{};
        h.id = rng();
        h.op = static_cast<uint16_t>(below(20));
        h.kind = below(10) ? 1 : static_cast<uint8_t>(below(4));
        h.code = static_cast<uint8_t>(below(20));
        h.payload_count = static_cast<uint32_t>(below(4));
        h.fields_bytes = below(2) ? below(64) : below(area);
        h.body_spilled = below(4) == 0 ? 1 : static_cast<uint8_t>(below(3) == 0);
        h.region_offset = below(2) ? 0 : below(area + 10);
        h.region_bytes = below(2) ? area : below(area + 10);
        h.release_token = rng();
        uint8_t* slot = raw->req().slot(tail);
        std::memcpy(slot, &h, sizeof h);
        for (uint32_t i = 0; i < h.payload_count; ++i) {
          shm::PayloadRef p{below(area), below(1 << 20), static_cast<uint32_t>(below(3) == 0), 0};
          std::memcpy(slot + sizeof h + i * sizeof p, &p, sizeof p);
        }
        for (uint64_t i = sizeof h + h.payload_count * sizeof(shm::PayloadRef);
             i < l.params.slot_bytes && i < sizeof h + 96; ++i)
          slot[i] = static_cast<uint8_t>(rng());
        tail = __atomic_load_n(
                   &reinterpret_cast<shm::RingControl*>(base + l.request_ring_control)->tail,
                   __ATOMIC_RELAXED) +
               1;
        raw->req().tail().store(tail, std::memory_order_release);
        const char bell = 1;
        (void)::send(raw->sock(), &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      }
      case 5: {  // release tokens, real-looking and not
        auto* rel = reinterpret_cast<shm::RingControl*>(base + l.release_ring_control);
        uint32_t t = __atomic_load_n(&rel->tail, __ATOMIC_RELAXED);
        const uint64_t token = below(2) ? below(64) : rng();
        std::memcpy(base + l.release_slots + 8 * (t & (l.params.release_count - 1)), &token, 8);
        __atomic_store_n(&rel->tail, t + 1, __ATOMIC_RELEASE);
        const char bell = 1;
        (void)::send(raw->sock(), &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      }
      case 6: {  // consume the responses
        raw->resp().head().store(raw->resp().tail().load(std::memory_order_acquire),
                                 std::memory_order_release);
        break;
      }
      case 7: {  // a valid get of the other client's namespace, then scribble over the rings
        wire::GetBlocksRequest g;
        g.ns = "good";
        g.fp = fp_;
        g.keys = chain.keys;
        wire::Message m = g.Encode();
        const shm::MessagePlan plan = shm::PlanMessage(m, l.params.slot_bytes);
        shm::WriteRegion(m, plan, raw->req_area(), 0);
        tail = raw->req().tail().load(std::memory_order_relaxed);
        shm::WriteSlot(raw->req().slot(tail), m, plan, 0);
        raw->req().tail().store(++tail, std::memory_order_release);
        const char bell = 1;
        (void)::send(raw->sock(), &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      }
    }
    if (round % 64 == 0) ::sched_yield();
  }
  stop.store(true);
  reader.join();
  raw.reset();
  // The other client is still served, and the hostile one left nothing behind.
  auto got = good->GetBlocks("good", fp_, chain.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(
      server_->WaitFor([](const ShmServerStats& s) { return s.segments_live == 1; }, kWaitMicros));
}

// A client that dies holding shared payloads (a get's response it never released) and in the
// middle of a request (here: while the store writes its sidecar) leaves nothing behind once that
// request ends: no segment, no region, no pinned payload.
TEST_F(HostileShmClient, AClientDyingMidRequestWithBorrowsLeavesNothingPinned) {
  const TestChain chain = MakeChain(2, 80 << 10);
  ASSERT_TRUE(store_->SaveChain("tenant", fp_, chain.Puts()).ok());
  auto raw = std::make_unique<RawClient>(server_->socket_path());
  ASSERT_TRUE(raw->ok());
  wire::GetBlocksRequest get;
  get.ns = "tenant";
  get.fp = fp_;
  get.keys = chain.keys;
  raw->Send(get.Encode());
  auto answer = raw->Receive();
  ASSERT_TRUE(answer.ok() && answer->error.ok());
  ASSERT_NE(answer->header.release_token, 0u);  // held for the client until it releases it
  EXPECT_EQ(server_->Stats().shared_payloads_live, 2u);

  const std::string bytes(1000, 's');
  wire::PutSidecarRequest put;
  put.ns = "tenant";
  put.fp = fp_;
  put.tip = chain.tip();
  put.bytes = BufferSlice{nullptr, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  ShmServer* server = server_.get();
  l2_.OnceBeforePut("/sidecar/", [&raw, server] {
    raw.reset();  // the client dies (its socket and mapping go) while the daemon serves it
    EXPECT_TRUE(
        server->WaitFor([](const ShmServerStats& s) { return s.clients == 0; }, kWaitMicros));
  });
  raw->Send(put.Encode());
  EXPECT_TRUE(server_->WaitFor(
      [](const ShmServerStats& s) {
        return s.segments_live == 0 && s.shared_payloads_live == 0 && s.response_regions_live == 0;
      },
      kWaitMicros));
  EXPECT_EQ(raw, nullptr);
}

// A client that floods its control socket with doorbell datagrams from many threads (faster, on
// a busy host, than one worker can read them) must not take the workers from the other clients:
// the worker draining its doorbell holds that client's mutex, which every worker about to sleep
// waits for (DrainIdleReleases), and each datagram wakes another sleeping worker into the same
// drain. Another client's calls are answered while the flood goes on.
TEST_F(HostileShmClient, FloodingItsDoorbellDoesNotStarveOtherClients) {
  RawClient raw(server_->socket_path());
  ASSERT_TRUE(raw.ok());
  const std::unique_ptr<Store> good = Client();
  ASSERT_TRUE(good);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  std::vector<std::thread> ringers;
  for (int i = 0; i < 32; ++i) {
    ringers.emplace_back([&] {
      const char bell = 1;
      while (!stop.load(std::memory_order_relaxed)) {
        // Blocking, as fast as the daemon reads (a daemon that stops reading leaves them
        // blocked until the socket is shut down below).
        if (::send(raw.sock(), &bell, 1, MSG_NOSIGNAL) == 1) sent.fetch_add(1);
      }
    });
  }
  // Ends the flood only if the calls below never get through (a bound, never reached when they
  // do): then the calls are answered after it, and counted as not answered during it.
  std::atomic<bool> calls_done{false};
  std::thread bound([&] {
    const uint64_t deadline = RealClock()->NowMicros() + kWaitMicros;
    while (!calls_done.load() && RealClock()->NowMicros() < deadline)
      RealClock()->SleepMicros(1000);
    stop.store(true);
  });
  // Every worker has been woken by the flood by now, and has drained some of it.
  while (sent.load() < 100 && !stop.load()) RealClock()->SleepMicros(1000);
  int answered_during_flood = 0;
  for (int i = 0; i < 20; ++i) {
    // Idle between calls, so that a call needs a worker to wake for it.
    RealClock()->SleepMicros(2000);
    auto n = good->LookupPrefix("tenant", fp_, std::vector<BlockKey>{Key(1)});
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    if (!stop.load()) answered_during_flood++;
  }
  calls_done.store(true);
  bound.join();
  (void)::shutdown(raw.sock(), SHUT_RDWR);  // unblocks the ringers
  for (auto& t : ringers) t.join();
  EXPECT_EQ(answered_during_flood, 20);
}

}  // namespace
}  // namespace wombatkv::testing
