#include "tools/workload/workload.h"

#include <cstring>
#include <memory>
#include <unordered_set>
#include <vector>

#include "base/check.h"

namespace wombatkv::workload {
namespace {

struct Conversation {
  std::vector<BlockKey> keys;  // root (system prompt) first
};

class Runner {
 public:
  Runner(Store& store, const WorkloadOptions& options)
      : store_(store), opt_(options), clock_(*options.clock) {}

  WorkloadResult Run() {
    const Shape& shape = opt_.shape;
    r_.counters.turns_total = uint64_t{shape.conversations} * shape.turns;
    std::vector<BlockKey> system;
    BlockKey parent;
    for (uint32_t j = 0; j < shape.system_blocks; ++j) {
      parent = ChainKey(parent, BlockTokens(shape.seed, 0, j));
      system.push_back(parent);
    }
    std::vector<Conversation> convs(shape.conversations, Conversation{system});
    scratch_.resize(shape.block_bytes);

    const uint64_t start = clock_.NowMicros();
    for (uint32_t turn = 0; turn < shape.turns && r_.error.ok(); ++turn) {
      for (uint32_t c = 0; c < shape.conversations && r_.error.ok(); ++c) {
        Conversation& conv = convs[c];
        const uint32_t n = TurnBlocks(shape, c, turn);
        for (uint32_t j = 0; j < n; ++j) {
          BlockKey prev = conv.keys.empty() ? BlockKey() : conv.keys.back();
          conv.keys.push_back(ChainKey(prev, BlockTokens(shape.seed, TurnStream(c, turn), j)));
        }
        if (Status s = Turn(conv); !s.ok()) {
          r_.error = s;
          r_.error_what = "conversation " + std::to_string(c) + ", turn " + std::to_string(turn) +
                          ": " + r_.error_what;
          break;
        }
        r_.counters.turns++;
        r_.counters.elapsed_micros = clock_.NowMicros() - start;
        if (opt_.on_turn) opt_.on_turn(r_.counters);
      }
    }
    r_.counters.elapsed_micros = clock_.NowMicros() - start;
    return std::move(r_);
  }

 private:
  Status Fail(std::string what, Status s) {
    r_.error_what = std::move(what);
    return s;
  }

  Status Turn(const Conversation& conv) {
    Counters& k = r_.counters;
    const std::vector<BlockKey>& keys = conv.keys;
    if (keys.empty()) return Status::Ok();

    // 1. Lookup.
    uint64_t t0 = clock_.NowMicros();
    auto hit = store_.LookupPrefix(opt_.ns, opt_.fp, keys);
    r_.lookup.Add(clock_.NowMicros() - t0);
    if (!hit.ok()) return Fail("lookup", hit.status());
    k.lookups++;
    k.keys_looked_up += keys.size();
    size_t h = *hit;
    WMBT_CHECK(h <= keys.size());

    // 2. Restore the cached prefix, and check every byte.
    if (h > 0) {
      std::span<const BlockKey> prefix(keys.data(), h);
      t0 = clock_.NowMicros();
      auto borrow = store_.GetBlocks(opt_.ns, opt_.fp, prefix);
      r_.get.Add(clock_.NowMicros() - t0);
      if (borrow.ok()) {
        WMBT_CHECK(borrow->size() == h);
        for (size_t i = 0; i < h; ++i) {
          ByteView got = borrow->payload(i);
          FillPayload(keys[i], scratch_);
          if (got.size() != scratch_.size() ||
              std::memcmp(got.data(), scratch_.data(), scratch_.size()) != 0) {
            k.mismatched_blocks++;
          }
          k.bytes_restored += got.size();
          if (!stored_.contains(keys[i])) k.blocks_from_earlier++;
        }
        k.blocks_hit += h;
      } else if (borrow.status().IsNotFound()) {
        // Evicted between lookup and get: an engine recomputes the whole prefix.
        k.get_misses++;
        h = 0;
      } else {
        return Fail("get", borrow.status());
      }
    }

    // 3. "Prefill" the missing suffix and put it.
    const size_t missing = keys.size() - h;
    k.blocks_missed += missing;
    if (missing == 0) {
      k.publishes_skipped++;
      return Status::Ok();
    }
    std::vector<std::shared_ptr<Buffer>> payloads;
    std::vector<BlockPut> puts;
    payloads.reserve(missing);
    puts.reserve(missing);
    for (size_t i = h; i < keys.size(); ++i) {
      auto buf = Buffer::Allocate(opt_.shape.block_bytes);
      FillPayload(keys[i], {buf->data(), buf->size()});
      puts.push_back({keys[i], i == 0 ? BlockKey() : keys[i - 1], buf->view()});
      payloads.push_back(std::move(buf));
    }
    t0 = clock_.NowMicros();
    auto hashes = store_.PutBlocks(opt_.ns, opt_.fp, puts);
    r_.put.Add(clock_.NowMicros() - t0);
    if (!hashes.ok()) return Fail("put", hashes.status());
    for (const BlockPut& p : puts) stored_.insert(p.key);
    k.blocks_put += missing;
    k.bytes_put += missing * opt_.shape.block_bytes;

    // 4. Publish: the chain id is the tip, as the C ABI does.
    const BlockKey& tip = keys.back();
    t0 = clock_.NowMicros();
    auto version = store_.PublishChain(opt_.ns, opt_.fp, tip, tip);
    r_.publish.Add(clock_.NowMicros() - t0);
    if (!version.ok()) return Fail("publish", version.status());
    k.publishes++;
    return Status::Ok();
  }

  Store& store_;
  const WorkloadOptions& opt_;
  Clock& clock_;
  WorkloadResult r_;
  std::vector<uint8_t> scratch_;
  std::unordered_set<BlockKey, FixedBytesHash> stored_;  // keys this run put
};

}  // namespace

WorkloadResult RunWorkload(Store& store, const WorkloadOptions& options) {
  WMBT_CHECK(options.clock != nullptr);
  return Runner(store, options).Run();
}

}  // namespace wombatkv::workload
