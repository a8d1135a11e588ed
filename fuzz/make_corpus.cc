// Writes the seed corpus in fuzz/corpus/<target>/ (a few small valid and invalid inputs per target).
// Usage: wombatkv_fuzz_make_corpus <fuzz/corpus dir>. Run by hand when an input format changes; the
// output is checked in. Inputs for targets that read through FuzzedDataProvider are laid out as it
// reads them: strings from the front, integers (the mode byte first) from the back.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "layout/chain_head.h"
#include "layout/block_codec.h"
#include "layout/envelope.h"
#include "store/meta_records.h"
#include "wire/codec.h"
#include "wire/frame.h"

using namespace wombatkv;
namespace fs = std::filesystem;

namespace {

fs::path g_root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_root / target);
  std::ofstream(g_root / target / name, std::ios::binary) << bytes;
}

// Builds an input in FuzzedDataProvider order.
struct FdpWriter {
  std::string front;
  std::string back;  // in consumption order; reversed onto the end
  void Byte(uint8_t b) { back += static_cast<char>(b); }
  void RandomLengthString(const std::string& s) {
    for (char c : s) {
      front += c;
      if (c == '\\') front += '\\';
    }
    front += "\\n";  // terminator: a backslash and any other byte
  }
  void Keyish(const std::string& s) {  // fuzz_util.h KeyishString, length < 256
    static constexpr std::string_view kAlphabet = "abcdefABCDEF0123456789._-/xyzXYZ";
    Byte(static_cast<uint8_t>(s.size()));
    for (char c : s) Byte(static_cast<uint8_t>(kAlphabet.find(c)));
  }
  std::string Done(const std::string& rest = "") const {
    return front + rest + std::string(back.rbegin(), back.rend());
  }
};

template <typename T>
T Filled(uint8_t seed) {
  T v;
  for (size_t i = 0; i < T::kSize; ++i) v.bytes[i] = static_cast<uint8_t>(seed + 7 * i);
  return v;
}

layout::ChainHead Head(size_t entries) {
  layout::ChainHead h;
  h.ns = "default";
  h.fp = Filled<Fingerprint>(1);
  h.chain_id = Filled<ChainId>(2);
  h.version = 3;
  h.published_us = 1700000000000000;
  for (size_t i = 0; i < entries; ++i)
    h.entries.push_back({Filled<BlockKey>(static_cast<uint8_t>(10 + i)),
                         Filled<ContentHash>(static_cast<uint8_t>(40 + i)),
                         static_cast<uint32_t>(4096 * (i + 1))});
  return h;
}

std::string Envelope(layout::EnvelopeKind kind, const std::string& payload) {
  auto h = layout::EncodeEnvelopeHeader(kind, payload.size(), HashPayload(AsBytes(payload)));
  return std::string(reinterpret_cast<const char*>(h.bytes), sizeof h.bytes) + payload;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <fuzz/corpus dir>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];

  // fuzz_chain_head: raw head objects.
  const std::string h1 = layout::EncodeChainHead(Head(1));
  const std::string h3 = layout::EncodeChainHead(Head(3));
  Write("fuzz_chain_head", "valid_1_entry", h1);
  Write("fuzz_chain_head", "valid_3_entries", h3);
  std::string bad_crc = h1;
  bad_crc[bad_crc.size() - 1] ^= 1;
  Write("fuzz_chain_head", "bad_crc", bad_crc);
  Write("fuzz_chain_head", "truncated", h3.substr(0, h3.size() - 20));
  Write("fuzz_chain_head", "bad_magic", "WKX1" + h1.substr(4));
  Write("fuzz_chain_head", "short", h1.substr(0, 10));

  // fuzz_envelope: raw blob/sidecar objects.
  Write("fuzz_envelope", "blob_valid", Envelope(layout::EnvelopeKind::kBlob, "hello, kv cache"));
  Write("fuzz_envelope", "blob_empty", Envelope(layout::EnvelopeKind::kBlob, ""));
  Write("fuzz_envelope", "sidecar_valid", Envelope(layout::EnvelopeKind::kSidecar, "{\"a\":1}"));
  std::string bad_payload = Envelope(layout::EnvelopeKind::kBlob, "payload bytes");
  bad_payload.back() ^= 0x20;
  Write("fuzz_envelope", "blob_corrupt_payload", bad_payload);
  std::string bad_header = Envelope(layout::EnvelopeKind::kBlob, "x");
  bad_header[8] ^= 1;
  Write("fuzz_envelope", "blob_bad_header_crc", bad_header);
  const std::string compressible(3000, 'k');
  BufferSlice packed = layout::CompressIfWorthIt(AsBytes(compressible), 1);
  auto zh = layout::EncodeEnvelopeHeader(
      layout::EnvelopeKind::kBlob,
      {layout::Codec::kZstd, compressible.size(), packed.size, HashPayload(AsBytes(compressible))});
  Write("fuzz_envelope", "blob_zstd",
        std::string(reinterpret_cast<const char*>(zh.bytes), sizeof zh.bytes) +
            std::string(AsChars(packed.view())));

  // fuzz_meta_records: key (random-length string), then value.
  auto record = [](const std::string& key, const std::string& value) {
    FdpWriter w;
    w.RandomLengthString(key);
    return w.Done(value);
  };
  const layout::ChainHead head = Head(2);
  const std::string hkey = meta_records::HeadKey(head.ns, head.fp, head.chain_id);
  const std::string hval = meta_records::EncodeHeadValue("\"etag-1\"", layout::EncodeChainHead(head));
  Write("fuzz_meta_records", "head_valid", record(hkey, hval));
  Write("fuzz_meta_records", "head_wrong_key",
        record(meta_records::HeadKey("other", head.fp, head.chain_id), hval));
  meta_records::PendingRecord p{Filled<BlockKey>(5), Filled<ContentHash>(6), 4096, 1700000000};
  const std::string pkey = meta_records::PendingKey("default", head.fp, Filled<BlockKey>(9));
  Write("fuzz_meta_records", "pending_valid", record(pkey, meta_records::EncodePending(p)));
  Write("fuzz_meta_records", "pending_bad_ns",
        record(meta_records::PendingKey("a/b", head.fp, Filled<BlockKey>(9)),
               meta_records::EncodePending(p)));
  Write("fuzz_meta_records", "truncated_etag", record(hkey, std::string("\xff\x00", 2) + "abc"));

  // fuzz_names: the mode is the last byte (0 hex, 1 namespace, 2 prefix, 3 chain key, 4 ns dir,
  // 5 object key, 6 tokens).
  Write("fuzz_names", "hex_fingerprint", "0123456789abcdefABCDEF01" + std::string(1, '\0'));
  Write("fuzz_names", "hex_chain", Filled<ChainId>(3).ToHex() + std::string(1, '\0'));
  Write("fuzz_names", "hex_bad", "0123456789abcdefABCDEF0g" + std::string(1, '\0'));
  Write("fuzz_names", "ns_valid", "team-a.v1_x\x01");
  Write("fuzz_names", "ns_dotdot", "..\x01");
  {
    FdpWriter w;  // prefix "team/kv" (random-length path), ns "default"
    w.Byte(2);
    w.Byte(1);
    w.RandomLengthString("team/kv");
    w.Keyish("default");
    Write("fuzz_names", "prefix_valid", w.Done());
    FdpWriter bad;
    bad.Byte(2);
    bad.Byte(1);
    bad.RandomLengthString("team//../kv");
    bad.Keyish("ns");
    Write("fuzz_names", "prefix_bad", bad.Done());
  }
  {
    FdpWriter w;  // chain key under prefix "kv", ns "default"
    w.Byte(3);
    w.Keyish("kv");
    w.Keyish("default");
    w.Byte(1);
    Write("fuzz_names", "chain_key_valid",
          w.Done(Filled<Fingerprint>(1).ToHex() + "/" + Filled<ChainId>(2).ToHex()));
  }
  {
    FdpWriter w;
    w.Byte(4);
    w.Keyish("kv");
    w.Byte(1);
    Write("fuzz_names", "ns_dir_valid", w.Done("default/"));
  }
  {
    FdpWriter w;
    w.Byte(5);
    w.Byte(100);  // max_keys (one byte of a size_t range: 100)
    w.RandomLengthString("/");
    w.Byte(1);
    Write("fuzz_names", "object_key_valid", w.Done("kv/default/wombatkv/v1/blob/00ff"));
  }
  {
    FdpWriter w;
    w.Byte(6);
    w.Keyish("kv/a/");
    w.Keyish("kv/a/b");
    w.Keyish("c");
    Write("fuzz_names", "tokens", w.Done());
  }

  // fuzz_config: the mode is the last byte (0 env, 1 set, 2 byte size).
  {
    FdpWriter w;
    w.Byte(0);
    w.Byte(3);  // three variables, each a known name (by index) and a value
    const std::vector<std::pair<int, std::string>> vars = {
        {1, "team-a"}, {4, "512MiB"}, {9, "debug"}};
    for (const auto& [idx, value] : vars) {
      w.Byte(1);  // not a random name
      w.Byte(static_cast<uint8_t>(idx));
      w.RandomLengthString(value);
    }
    Write("fuzz_config", "env_valid", w.Done());
  }
  {
    FdpWriter w;
    w.Byte(0);
    w.Byte(1);
    w.Byte(1);
    w.Byte(5);  // upload threads
    w.RandomLengthString("0");
    Write("fuzz_config", "env_bad_threads", w.Done());
  }
  {
    FdpWriter w;
    w.Byte(1);
    w.Byte(1);
    w.Byte(3);  // WMBT_KV_S3_PREFIX
    Write("fuzz_config", "set_prefix", w.Done("team/kv"));
  }
  {
    FdpWriter w;
    w.Byte(1);
    w.Byte(1);
    w.Byte(7);  // WMBT_KV_TCP_ADDR
    Write("fuzz_config", "set_tcp", w.Done("[::1]:7070"));
  }
  Write("fuzz_config", "bytes_8gib", "8GiB" + std::string(1, '\2'));
  Write("fuzz_config", "bytes_overflow", "17179869184T" + std::string(1, '\2'));

  // fuzz_wire_codec: '\0' + a frame body, or '\1' + op, flags, payload count, lengths, bytes.
  {
    auto slice = [](std::string_view s) {
      auto b = Buffer::CopyOf(AsBytes(s));
      return BufferSlice{b, b->data(), b->size()};
    };
    auto body = [](const wire::Message& m) {
      auto f = wire::Frame(m);
      std::string out(1, '\0');
      for (const auto& v : f->iov()) out.append(static_cast<const char*>(v.iov_base), v.iov_len);
      out.erase(1, wire::kEnvelopeBytes);
      return out;
    };
    auto direct = [](const wire::Message& m) {
      std::string out(1, '\1');
      out += static_cast<char>(m.op & 0xff);
      out += static_cast<char>(m.op >> 8);
      out += static_cast<char>(m.flags);
      out += static_cast<char>(m.payloads.size());
      for (const auto& p : m.payloads) out += static_cast<char>(p.size);
      for (const auto& p : m.payloads) out += std::string(AsChars(p.view()));
      out.append(reinterpret_cast<const char*>(m.fields.data()), m.fields.size());
      return out;
    };
    const Fingerprint fp = Filled<Fingerprint>(4);
    const BlockKey k1 = Filled<BlockKey>(5), k2 = Filled<BlockKey>(6);
    NamespaceUsage usage;
    usage.ns = "default";
    usage.chains = 1, usage.head_bytes = 2, usage.blobs = 3, usage.blob_bytes = 4;
    usage.sidecars = 5, usage.sidecar_bytes = 6;
    FingerprintUsage fp_usage;
    fp_usage.fp = fp;
    fp_usage.chains = 1, fp_usage.head_bytes = 2, fp_usage.blobs = 3, fp_usage.blob_bytes = 4;
    usage.fingerprints.push_back(fp_usage);
    const std::pair<std::string, wire::Message> msgs[] = {
        {"hello", wire::HelloRequest{1, "vllm", "token"}.Encode()},
        {"put_blocks", wire::PutBlocksRequest{"default", fp, {{k1, {}, slice("ab")},
                                                             {k2, k1, slice("cde")}}}.Encode()},
        {"publish_cas", wire::PublishChainRequest{"default", fp, k2, k2, 3}.Encode()},
        {"publish_conflict", wire::PublishChainResponse::EncodeConflict(
                                 Status::Conflict("v4"), ChainState{"default", fp, k2, k2, 4, 2})},
        {"lookup", wire::LookupPrefixRequest{"default", fp, {k1, k2}}.Encode()},
        {"get_blocks_response", wire::GetBlocksResponse{{slice("abc"), slice("de")}}.Encode()},
        {"not_found", wire::EncodeStatusResponse(wire::Op::kGetBlocks, Status::NotFound("miss"))},
        {"list_chains", wire::ListChainsResponse{{ChainState{"default", fp, k2, k2, 4, 2}}}.Encode()},
        {"get_chain", wire::GetChainResponse{{{k1, Filled<ContentHash>(7), 2}}}.Encode()},
        {"sidecar", wire::PutSidecarRequest{"default", fp, k2, slice("tail")}.Encode()},
        {"stats", wire::StatsResponse{StoreStats{}, "file:///l2"}.Encode()},
        {"usage", wire::UsageResponse{{usage}}.Encode()},
    };
    for (const auto& [name, m] : msgs) {
      Write("fuzz_wire_codec", "body_" + name, body(m));
      Write("fuzz_wire_codec", "direct_" + name, direct(m));
    }
    Write("fuzz_wire_codec", "body_truncated", body(msgs[1].second).substr(0, 30));
  }
  return 0;
}
