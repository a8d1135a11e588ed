#include "transport/tcp/tcp_channel.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "base/limits.h"
#include "base/redialer.h"
#include "base/spin_poll.h"
#include "transport/tcp/frame_reader.h"
#include "transport/tcp/sockets.h"
#include "wire/codec.h"

namespace wombatkv::tcp {
namespace {

// How long a waiting caller polls for its response before sleeping, in µs (base/spin_poll.h): up to
// 50 µs, probing once per 128 calls at most when spinning has stopped paying.
constexpr AdaptiveSpin::Options kClientSpin{0, 50, 16, 128};
// A connection that answered a call this recently is not checked for a daemon-side close before
// the next send (a poll(2) per call saved on a busy connection); see Exchange.
constexpr uint64_t kPeerCheckQuietMicros = 50;
// The client's reads go through a 16 KiB staging buffer (not the reader's default 64 KiB): a
// response holds one or a few small frames, and a large body's first read then copies at most
// 16 KiB out of staging before the rest is read straight into the body (frame_reader.h
// invariant 3) — with 64 KiB, a 64 KiB get was copied once more in user space.
constexpr size_t kClientStagingBytes = 16 << 10;
// Response bodies up to this size are recycled once the caller released them (frame_reader.h
// invariant 5); the connection keeps at most two (one under 1 MiB, one larger).
constexpr size_t kClientRecycleBytesMax = 64 << 20;
// A frame with at most this many iovecs (head + payloads) is sent from an array on the stack:
// a get or lookup request then allocates nothing to be sent.
constexpr size_t kInlineIovecs = 8;

// What a channel learns about its calls that wait for a disk sync, kept across reconnections: how
// long to poll (kSyncWaitSpin) and whether to poll at all (base/contention_gate.h).
struct SyncWaits {
  AdaptiveSpin spin{kSyncWaitSpin};
  ContentionGate gate;
};

// A call waiting for its response. Lives on the caller's stack; the connection touches it only
// under its mutex and only while it is registered.
struct PendingCall {
  std::condition_variable cv;
  bool done = false;
  std::optional<Result<wire::Message>> result;
  // Buffers for the response's payloads (Channel::CallInto); empty for the usual slices.
  std::span<const std::span<uint8_t>> dsts;
  // The reader is receiving this call's response into dsts: the call must not return (and its
  // caller reuse the buffers) before the reader is done with them (Connection::Place).
  bool placing = false;
  // Asleep on cv, so a reader that leaves can hand it the reading (a registered call may still
  // be sending its request: waking it would wake nobody).
  bool waiting = false;
};

// One TCP connection to the daemon. There is no reader thread: the callers read the socket
// themselves, one at a time (leader/follower). A caller waiting for its response becomes the
// reader when nobody is reading; it hands every other call's response to that call's waiter and
// stops reading once its own has arrived, waking one waiter to take over. So a lone caller sends,
// reads and returns on its own thread (no hand-off), while concurrent callers stay pipelined on
// the one connection.
class Connection {
 public:
  // `sync_waits`: the channel's, so what it learnt outlives a reconnection.
  Connection(int fd, std::string where, uint32_t max_frame, SyncWaits& sync_waits)
      : fd_(fd),
        where_(std::move(where)),
        reader_(max_frame, kClientStagingBytes, kClientRecycleBytesMax),
        sync_waits_(sync_waits) {
    reader_.set_payload_placer(
        [this](uint64_t id, std::span<const uint64_t> lengths) { return Place(id, lengths); });
  }

  // Every caller holds a reference while it uses the connection, so nobody reads any more.
  ~Connection() { ::close(fd_); }

  bool dead() {
    std::lock_guard<std::mutex> g(mu_);
    return dead_;
  }

  // False when the connection is already dead (nothing was sent). `*alone`: no other call was in
  // flight, so nobody has been watching the socket.
  bool Register(uint64_t id, PendingCall* call, bool* alone) {
    std::lock_guard<std::mutex> g(mu_);
    if (dead_) return false;
    *alone = calls_.empty() && !reading_;
    calls_.emplace_back(id, call);
    if (!call->dsts.empty()) calls_with_dsts_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // For a connection nobody was reading: true if the daemon has closed it meanwhile (restart,
  // idle close), which then fails the calls on it. Without a reader thread this is how an idle
  // client learns it before sending, so the request can go out again on a fresh connection.
  bool PeerClosed() {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    int n;
    do {
      n = ::poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) return false;
    Kill(Gone("the daemon closed the connection"));
    return true;
  }

  // Writes the whole frame (frames of concurrent callers never interleave). On failure the
  // connection is dead and every call on it, this one included, has failed.
  Status Send(const wire::FramedMessage& frame) {
    iovec inline_iov[kInlineIovecs];
    std::vector<iovec> heap_iov;
    iovec* iov = inline_iov;
    size_t count = 0;
    if (frame.payloads.size() < kInlineIovecs) {
      inline_iov[count++] = {const_cast<uint8_t*>(frame.head.data()), frame.head.size()};
      for (const BufferSlice& p : frame.payloads) {
        if (p.size) inline_iov[count++] = {const_cast<uint8_t*>(p.data), p.size};
      }
    } else {
      heap_iov = frame.iov();
      iov = heap_iov.data();
      count = heap_iov.size();
    }
    std::lock_guard<std::mutex> g(write_mu_);
    size_t first = 0;
    while (first < count) {
      msghdr msg{};
      msg.msg_iov = iov + first;
      msg.msg_iovlen = std::min<size_t>(count - first, 256);
      ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        Status st = errno == EAGAIN || errno == EWOULDBLOCK
                        ? Status::Unavailable("sending to wombatkvd at " + where_ +
                                              " timed out (the daemon is not reading)")
                        : SocketError("sending to wombatkvd at " + where_, errno);
        Kill(st);
        return st;
      }
      size_t done = static_cast<size_t>(n);
      while (first < count && done >= iov[first].iov_len) done -= iov[first++].iov_len;
      if (done > 0) {
        iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + done;
        iov[first].iov_len -= done;
      }
    }
    return Status::Ok();
  }

  // Waits for the response of call `id` for at most `timeout_micros` (0 = for ever) from `start`
  // (Clock micros, read by the caller just before it sent: the clock is not read again before
  // the first wait), reading the socket itself whenever nobody else is. `sync`: the answer
  // waits for a disk sync (wire::AwaitsDiskSync), and the spin is learnt from whole waits.
  Result<wire::Message> Wait(uint64_t id, PendingCall& call, Clock& clock, uint64_t start,
                             uint64_t timeout_micros, bool sync) {
    std::unique_lock<std::mutex> l(mu_);
    bool spun = false;
    // A sync wait that polled and was not stopped by contention teaches sync_waits_.spin how
    // long the whole wait took, when it ends.
    bool learn = false;
    auto answer = [&] {
      AwaitPlacementEndLocked(call, l, clock);
      // Only answers teach it: a dead connection or an early error is not a sync.
      if (learn && call.result->ok()) sync_waits_.spin.Waited(clock.NowMicros() - start);
      return std::move(*call.result);
    };
    for (bool first = true;; first = false) {
      if (call.done) return answer();
      uint64_t wait = 3'600'000'000ull;  // re-check hourly when waiting for ever
      if (timeout_micros > 0) {
        const uint64_t now = first ? start : clock.NowMicros();
        const uint64_t elapsed = now > start ? now - start : 0;
        if (elapsed >= timeout_micros) {
          Status late = Status::Unavailable(
              "no response from wombatkvd at " + where_ + " within " +
              std::to_string(timeout_micros / 1000) +
              " ms; the call may or may not have taken effect (is the daemon stopped or "
              "overloaded? WMBT_KV_REQUEST_TIMEOUT_MS sets how long a call waits)");
          if (call.placing) {
            // Its response is being received into the caller's buffers: the rest can never be
            // skipped, so the connection goes (the other calls on it fail as in a restart), and
            // the call waits until nobody writes there.
            KillLocked(
                GoneLocked("a call timed out while its answer was being received into "
                           "its buffers, and the rest of that answer cannot be skipped"));
            AwaitPlacementEndLocked(call, l, clock);
            return late;
          }
          EraseLocked(id);
          WakeNextReaderLocked();  // it may have been handed the reading: pass it on
          return late;
        }
        wait = timeout_micros - elapsed;
      }
      if (!reading_ && !dead_) {
        reading_ = true;
        // First poll the socket for a while: an answer that comes within microseconds is then
        // read without the wake-up (docs/daemon.md, "Spinning").
        if (spin_enabled_ && !spun) {  // once per call: a large body arrives in many reads
          spun = true;
          l.unlock();
          learn = SpinForResponse(call, clock, sync, wait) && sync;
          l.lock();
          if (call.done) {
            StopReadingLocked();
            WakeNextReaderLocked();
            last_answer_us_.store(clock.NowMicros(), std::memory_order_relaxed);
            return answer();
          }
        }
        // Sleeping in recv(2) itself (bounded by the socket's receive timeout) saves a poll(2)
        // per call; only when that bound would overshoot this call's deadline by more than 1%
        // does the reader wait in poll(2) for the exact remainder.
        const bool direct =
            timeout_micros == 0 ||
            (recv_timeout_micros_ > 0 && recv_timeout_micros_ <= wait + timeout_micros / 100);
        l.unlock();
        ReadSome(direct ? 0 : wait);
        l.lock();
        StopReadingLocked();
        if (call.done) {
          WakeNextReaderLocked();
          last_answer_us_.store(clock.NowMicros(), std::memory_order_relaxed);
          return answer();
        }
        continue;
      }
      call.waiting = true;
      clock.WaitFor(call.cv, l, wait);
      call.waiting = false;
    }
  }

  // Fails every call in flight with `why` and makes the connection unusable.
  void Kill(const Status& why) {
    std::lock_guard<std::mutex> g(mu_);
    KillLocked(why);
  }

  // A call that leaves without its answer (its request failed to go out, or the connection was
  // found closed): the reader may have taken its buffers for an answer a daemon sent early.
  void Leave(PendingCall& call, Clock& clock) {
    std::unique_lock<std::mutex> l(mu_);
    AwaitPlacementEndLocked(call, l, clock);
  }

  // REQUIRES: mu_ held.
  void KillLocked(const Status& why) {
    if (dead_) return;
    dead_ = true;
    for (auto& [id, call] : calls_) {
      call->result.emplace(why);
      call->done = true;
      call->cv.notify_one();  // under the mutex: the waiter may destroy `call` once it returns
    }
    calls_.clear();
    calls_with_dsts_.store(0, std::memory_order_relaxed);
    ::shutdown(fd_, SHUT_RDWR);
  }

  // Bounds every blocking recv(2) on the socket (SO_RCVTIMEO); 0 = none.
  void SetReceiveTimeout(uint64_t micros) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(micros / 1'000'000);
    tv.tv_usec = static_cast<suseconds_t>(micros % 1'000'000);
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0) {
      std::lock_guard<std::mutex> g(mu_);
      recv_timeout_micros_ = micros;
    }
  }

  uint32_t server_max_frame = wire::kDefaultMaxBodyBytes;

  // When this connection last handed a caller its response (Clock micros; 0 = never).
  uint64_t last_answer_us() const { return last_answer_us_.load(std::memory_order_relaxed); }

  void set_spin(bool on) { spin_enabled_ = on; }

 private:
  // The reader left: one call asleep waiting takes over (a call not waiting yet — still sending
  // its request — will see no reader when it starts to wait). REQUIRES: mu_ held, reading_ false.
  void WakeNextReaderLocked() {
    for (auto& [id, call] : calls_) {
      if (!call->waiting) continue;
      call->cv.notify_one();
      return;
    }
  }

  // Forgets call `id` (answered or given up). REQUIRES: mu_ held.
  PendingCall* EraseLocked(uint64_t id) {
    for (auto& entry : calls_) {
      if (entry.first != id) continue;
      PendingCall* call = entry.second;
      entry = calls_.back();
      calls_.pop_back();
      if (!call->dsts.empty()) calls_with_dsts_.fetch_sub(1, std::memory_order_relaxed);
      return call;
    }
    return nullptr;
  }

  // Reads without sleeping for a while (base/spin_poll.h), until `call` is answered or the spin
  // ends. Only the current reader calls it (reading_ set). A short wait keeps yielding when
  // others take the core (the daemon, other clients): stopping then cost eight clients on two
  // cores 3–4% of their get throughput in an A/B, each response then waking a sleeper. A wait
  // for a disk sync (`sync`) polls as long as such waits took lately (kSyncWaitSpin) and stops
  // when the core is contended: it is long, and the cores are then better spent on the daemon
  // and the other clients; never past the call's deadline, `wait` µs away. While three quarters
  // of the recent sync polls stopped so, only one sync wait in eight polls (the contention
  // gate). False when a sync wait did not poll or its poll stopped for contention (which counts
  // as a failure; the caller learns nothing more from this wait).
  bool SpinForResponse(PendingCall& call, Clock& clock, bool sync, uint64_t wait) {
    auto answered = [&] {
      // A sync poll runs hundreds of rounds: each looks with poll(2), which does not take the
      // socket's lock, so the daemon's answer is not delivered against a recv(2) holding it
      // (kernel lock contentions per one-client 4 KiB save 1.0 -> 0.7, three alternating pairs).
      pollfd p{fd_, POLLIN, 0};
      if (sync && ::poll(&p, 1, 0) == 0) return false;
      const bool read = ReadSome(0, MSG_DONTWAIT);
      std::lock_guard<std::mutex> g(mu_);
      // A dead connection is read no more, even when this read found nothing: ReadSome may have
      // just released a call whose answer was being received into its buffers, and bytes still
      // queued on the socket would go there after that call returned.
      return dead_ || (read && call.done);
    };
    if (!sync) {
      SpinPoll(spin_, clock, Contended::kKeepYielding, answered);
      return true;
    }
    return SyncPoll(sync_waits_.spin, &sync_waits_.gate, clock, wait, answered);
  }

  // The reader's payload placer (frame_reader.h invariant 6): the buffers of call `id` when it
  // has buffers for exactly these payloads, each with room; it is then `placing` until its
  // response is delivered or the connection dies.
  std::span<const std::span<uint8_t>> Place(uint64_t id, std::span<const uint64_t> lengths) {
    if (calls_with_dsts_.load(std::memory_order_relaxed) == 0) return {};  // no lock for a get
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [call_id, call] : calls_) {
      if (call_id != id) continue;
      if (call->dsts.size() != lengths.size()) return {};
      for (size_t i = 0; i < lengths.size(); ++i) {
        if (call->dsts[i].size() < lengths[i]) return {};
      }
      call->placing = true;
      placing_ = call;
      return call->dsts;
    }
    return {};
  }

  // The reader leaves the socket. A call waiting for it to (AwaitPlacementEndLocked) may go on.
  // REQUIRES: mu_ held.
  void StopReadingLocked() {
    reading_ = false;
    if (placing_ != nullptr) placing_->cv.notify_all();
  }

  // A call that was being answered into its buffers when the connection died may return only
  // once no reader can write there again: once the reader has left the socket (Kill shut it
  // down, so it leaves soon, and releases the call: ReadSome); with nobody reading, nobody will
  // read this connection again. REQUIRES: mu_ held through `l`.
  void AwaitPlacementEndLocked(PendingCall& call, std::unique_lock<std::mutex>& l, Clock& clock) {
    while (call.placing) {
      if (!reading_) {
        call.placing = false;
        placing_ = nullptr;
        return;
      }
      clock.WaitFor(call.cv, l, 1'000'000);
    }
  }

  // ReadSomeFrames, after which a call whose placed response the connection's death cut short is
  // released to its waiter (AwaitPlacementEndLocked).
  bool ReadSome(uint64_t timeout_micros, int flags = 0) {
    const bool read = ReadSomeFrames(timeout_micros, flags);
    std::lock_guard<std::mutex> g(mu_);
    if (dead_ && placing_ != nullptr) {
      placing_->placing = false;
      placing_->cv.notify_all();
      placing_ = nullptr;
    }
    return read;
  }

  // One read(2) and the delivery of every frame it completed. Only the current reader calls
  // it (reading_ set). `timeout_micros` bounds the wait for bytes (0 = none); `flags` are
  // recv(2)'s (MSG_DONTWAIT: do not wait at all). False when nothing was read.
  bool ReadSomeFrames(uint64_t timeout_micros, int flags) {
    if (timeout_micros > 0) {
      pollfd p{fd_, POLLIN, 0};
      const int ms = static_cast<int>(std::min<uint64_t>((timeout_micros + 999) / 1000,
                                                         24ull * 3600 * 1000));
      int n = ::poll(&p, 1, ms);
      if (n == 0 || (n < 0 && errno == EINTR)) return false;  // the caller re-checks its deadline
    }
    auto r = reader_.ReadFrom(fd_, flags);
    if (!r.ok()) {
      Kill(Gone(r.status().message()));
      return true;
    }
    if (*r == FrameReader::ReadResult::kWouldBlock) return false;
    if (*r == FrameReader::ReadResult::kEof) {
      Kill(Gone("the daemon closed the connection"));
      return true;
    }
    for (;;) {
      auto m = reader_.Next();
      if (!m.ok()) {
        Kill(Gone("malformed frame from the daemon: " + m.status().ToString()));
        return true;
      }
      if (!m->has_value()) return true;
      Deliver(std::move(**m));
    }
  }

  void Deliver(wire::Message m) {
    std::lock_guard<std::mutex> g(mu_);
    PendingCall* call = EraseLocked(m.id);
    if (call == nullptr) {
      // Id 0: the daemon's answer to a frame it could not read; it closes the connection next.
      // Late answers to calls that timed out are dropped.
      if (m.id == 0) server_error_ = wire::ResponseStatus(m).ToString();
      return;
    }
    if (call->placing) {  // the reader is done with its buffers
      call->placing = false;
      placing_ = nullptr;
    }
    call->result.emplace(std::move(m));
    call->done = true;
    call->cv.notify_one();
  }

  Status Gone(const std::string& what) {
    std::lock_guard<std::mutex> g(mu_);
    return GoneLocked(what);
  }

  // REQUIRES: mu_ held.
  Status GoneLocked(const std::string& what) {
    const std::string reported =
        server_error_.empty() ? std::string() : " (it reported " + server_error_ + ")";
    return Status::Unavailable("lost the connection to wombatkvd at " + where_ + ": " + what +
                               reported +
                               "; calls in flight may or may not have taken effect, the next "
                               "call reconnects");
  }

  const int fd_;
  const std::string where_;
  FrameReader reader_;  // used only by the caller that has reading_ set
  std::mutex write_mu_;
  std::mutex mu_;  // guards the fields below
  bool dead_ = false;
  bool reading_ = false;  // a caller is reading the socket (at most one at a time)
  uint64_t recv_timeout_micros_ = 0;
  // The calls waiting for their response, by id: a flat list, since a connection has about one
  // call in flight per calling thread; registering one then allocates nothing once it has grown.
  std::vector<std::pair<uint64_t, PendingCall*>> calls_;
  std::string server_error_;
  PendingCall* placing_ = nullptr;  // the call whose response the reader receives into its dsts
  // Registered calls with dsts: written under mu_, read without it by Place, so a connection
  // whose calls have none never takes the lock for it.
  std::atomic<int> calls_with_dsts_{0};
  std::atomic<uint64_t> last_answer_us_{0};  // read without mu_ before each send
  bool spin_enabled_ = true;  // set before the connection is shared
  AdaptiveSpin spin_{kClientSpin};  // used only by the current reader
  SyncWaits& sync_waits_;  // thread-safe
};

class TcpChannel final : public Channel {
 public:
  explicit TcpChannel(TcpClientOptions options)
      : options_(std::move(options)),
        clock_(options_.clock ? options_.clock : RealClock()),
        where_("tcp://" + options_.address) {}

  // The first connection, so that ConnectTcp reports a bad address or token itself.
  Status Open() { return Current().status(); }

  Result<wire::Message> Call(wire::Message request) override {
    return CallInto(std::move(request), {});
  }

  Result<wire::Message> CallInto(wire::Message request,
                                 std::span<const std::span<uint8_t>> dsts) override {
    request.id = next_id_.fetch_add(1, std::memory_order_relaxed);
    request.flags &= static_cast<uint16_t>(~wire::kFlagResponse);
    const uint16_t op = request.op;
    // Framed up to what a frame can carry: the daemon's own limit, learnt at Hello (and raised
    // or lowered by --max-frame-bytes), is checked against each connection in Exchange.
    WMBT_ASSIGN_OR_RETURN(wire::FramedMessage frame,
                          wire::Frame(std::move(request), std::numeric_limits<uint32_t>::max()));
    for (int attempt = 0;; ++attempt) {
      WMBT_ASSIGN_OR_RETURN(std::shared_ptr<Connection> conn, Current());
      bool sent = false;
      auto r = Exchange(*conn, frame, op, &sent, options_.request_timeout_ms, dsts);
      // A request that never fully left this process cannot have taken effect: it is safe to
      // send again once, on a fresh connection (the daemon restarted while we were idle).
      if (!r.ok() && !sent && attempt == 0) continue;
      return r;
    }
  }

  std::string Describe() const override { return where_; }

 private:
  Result<std::shared_ptr<Connection>> Current() {
    return connection_.Get([](Connection& c) { return !c.dead(); }, [this] { return Dial(); });
  }

  Result<wire::Message> Exchange(Connection& conn, const wire::FramedMessage& frame, uint16_t op,
                                 bool* sent, uint64_t timeout_ms,
                                 std::span<const std::span<uint8_t>> dsts = {}) {
    const uint64_t body = frame.total_bytes() - wire::kEnvelopeBytes;
    if (body > conn.server_max_frame) {
      *sent = true;  // a retry would not help
      // As over shared memory (a request that does not fit the request area) and for a get
      // whose answer does not fit: too much for one call, not a malformed one.
      return Status::ResourceExhausted(
          wire::OpName(op) + " request of " + std::to_string(body) +
          " bytes exceeds the daemon's frame limit of " + std::to_string(conn.server_max_frame) +
          " bytes (wombatkvd --max-frame-bytes); send fewer or smaller blocks per call");
    }
    const uint64_t id = LoadId(frame);
    PendingCall call;
    call.dsts = dsts;
    bool alone = false;
    if (!conn.Register(id, &call, &alone)) return Status::Unavailable("connection lost");
    // Only a connection that has been quiet can have been closed by the daemon unnoticed (idle
    // close, restart). One that answered microseconds ago is taken as open: if the daemon closed
    // it in between, this call fails like any call in flight during a restart.
    // The one clock read before the send also starts the call's timeout.
    const uint64_t now = clock_->NowMicros();
    if (alone && now - conn.last_answer_us() >= kPeerCheckQuietMicros && conn.PeerClosed()) {
      conn.Leave(call, *clock_);
      return Status::Unavailable("connection lost");
    }
    Status st = conn.Send(frame);
    if (!st.ok()) {
      conn.Leave(call, *clock_);
      return st;
    }
    *sent = true;
    auto r = conn.Wait(id, call, *clock_, now, timeout_ms * 1000, wire::AwaitsDiskSync(op));
    if (!r.ok()) return r.status();
    if (r->op != op || !(r->flags & wire::kFlagResponse)) {
      return Status::Internal("wombatkvd at " + where_ + " answered " + wire::OpName(op) +
                              " with a " + wire::OpName(r->op) +
                              " message: a daemon/client mismatch or a bug");
    }
    return r;
  }

  static uint64_t LoadId(const wire::FramedMessage& frame) {
    uint64_t id = 0;
    for (int i = 7; i >= 0; --i) id = (id << 8) | frame.head[wire::kEnvelopeBytes + i];
    return id;
  }

  // Connects and says Hello. Called with mu_ held (one dial at a time).
  Result<std::shared_ptr<Connection>> Dial() {
    WMBT_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options_.address, false));
    auto addrs = Resolve(hp, /*passive=*/false);
    if (!addrs.ok()) return addrs.status().WithContext("cannot reach wombatkvd at " + where_);
    Status last = Status::Unavailable("no address");
    int fd = -1;
    for (const SocketAddress& a : *addrs) {
      auto connected = ConnectOne(a);
      if (connected.ok()) {
        fd = *connected;
        break;
      }
      last = connected.status();
    }
    if (fd < 0) {
      return Status::Unavailable("cannot connect to wombatkvd at " + where_ + ": " +
                                 last.message() + " (is wombatkvd running and listening there?)");
    }
    auto conn = std::make_shared<Connection>(fd, where_, options_.max_frame_bytes, sync_waits_);
    conn->set_spin(options_.spin);
    // The Hello waits at most the connect timeout, and no longer than a call may wait: it is
    // part of the call that dialled.
    const uint64_t hello_ms = HelloTimeoutMs();
    conn->SetReceiveTimeout(hello_ms * 1000);
    wire::HelloRequest hello;
    hello.client_name = options_.client_name;
    hello.token = options_.auth_token;
    wire::Message m = hello.Encode();
    m.id = next_id_.fetch_add(1, std::memory_order_relaxed);
    WMBT_ASSIGN_OR_RETURN(wire::FramedMessage frame, wire::Frame(std::move(m)));
    bool sent = false;
    // A daemon that accepts but does not answer Hello is as unreachable as one that refuses
    // (callers wait on this dial).
    auto r = Exchange(*conn, frame, static_cast<uint16_t>(wire::Op::kHello), &sent, hello_ms);
    if (!r.ok() && r.status().code() == Code::kUnavailable) return GreetingFailed(r.status());
    if (!r.ok()) return r.status();
    auto welcome = wire::HelloResponse::Decode(*r);
    if (!welcome.ok()) return welcome.status().WithContext("wombatkvd at " + where_);
    if (welcome->max_frame_bytes > 0) conn->server_max_frame = welcome->max_frame_bytes;
    conn->SetReceiveTimeout(options_.request_timeout_ms * 1000);
    return conn;
  }

  // The connect timeout, or the request timeout if that is shorter (0 = for ever, for both).
  uint64_t HelloTimeoutMs() const {
    const uint64_t c = options_.connect_timeout_ms, r = options_.request_timeout_ms;
    if (c == 0 || r == 0) return c == 0 ? r : c;
    return std::min(c, r);
  }

  // Something listens at the address but the Hello did not complete. What happened, without the
  // advice for calls in flight (there are none yet), and what to check.
  Status GreetingFailed(const Status& st) const {
    std::string why = st.message();
    for (std::string_view advice : {"; calls in flight may", "; the call may or may not"}) {
      if (const size_t at = why.find(advice); at != std::string::npos) why.resize(at);
    }
    if (why.find("malformed frame") != std::string::npos) {
      return Status::Unavailable(
          where_ + " accepted the connection but did not answer as wombatkvd (" + why +
          "): check that WMBT_KV_TCP_ADDR names a wombatkvd --tcp listener, "
          "not its --http port or another service");
    }
    return Status::Unavailable(
        where_ + " accepted the connection but did not complete the greeting (" + why +
        "): the daemon may be starting (still opening its store: its /readyz says so), "
        "stopping, at its connection limit or overloaded (see its log), or this is not a "
        "wombatkvd --tcp listener");
  }

  Result<int> ConnectOne(const SocketAddress& a) {
    int fd = ::socket(a.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) return SocketError("socket", errno);
    auto fail = [fd](Status st) {
      ::close(fd);
      return st;
    };
    if (::connect(fd, a.get(), a.length) != 0) {
      if (errno != EINPROGRESS) return fail(SocketError(FormatAddress(a), errno));
      pollfd p{fd, POLLOUT, 0};
      // As the Hello: no longer than a call may wait (HelloTimeoutMs).
      const uint64_t wait_ms = HelloTimeoutMs();
      const int timeout = static_cast<int>(std::min<uint64_t>(wait_ms, 24ull * 3600 * 1000));
      int n;
      do {
        n = ::poll(&p, 1, wait_ms == 0 ? -1 : timeout);
      } while (n < 0 && errno == EINTR);
      if (n == 0) {
        return fail(Status::Unavailable(FormatAddress(a) + ": no answer within " +
                                        std::to_string(wait_ms) + " ms"));
      }
      int err = 0;
      socklen_t len = sizeof err;
      if (n < 0) err = errno;
      else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) return fail(SocketError(FormatAddress(a), err));
    }
    // Blocking from here on: the reading caller sleeps in poll/recv, senders in sendmsg.
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
      return fail(SocketError("fcntl", errno));
    (void)SetNoDelay(fd);
    if (options_.request_timeout_ms > 0) {
      timeval tv{};
      tv.tv_sec = static_cast<time_t>(options_.request_timeout_ms / 1000);
      tv.tv_usec = static_cast<suseconds_t>((options_.request_timeout_ms % 1000) * 1000);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    return fd;
  }

  const TcpClientOptions options_;
  Clock* const clock_;
  const std::string where_;
  // How long calls that await a disk sync poll, and whether they do (Connection::
  // SpinForResponse); kept across reconnections. Connections refer to it: they live no longer
  // than their calls, which the channel outlives.
  SyncWaits sync_waits_;
  std::atomic<uint64_t> next_id_{1};
  Redialer<Connection> connection_;  // one (re)connect at a time (base/redialer.h)
};

}  // namespace

Result<std::unique_ptr<Channel>> ConnectTcp(const TcpClientOptions& options) {
  if (options.auth_token.size() > limits::kAuthTokenBytesMax) {
    return Status::InvalidArgument("the auth token has " +
                                   std::to_string(options.auth_token.size()) +
                                   " bytes; tokens are at most " +
                                   std::to_string(limits::kAuthTokenBytesMax));
  }
  auto channel = std::make_unique<TcpChannel>(options);
  WMBT_RETURN_IF_ERROR(channel->Open());
  return std::unique_ptr<Channel>(std::move(channel));
}

}  // namespace wombatkv::tcp
