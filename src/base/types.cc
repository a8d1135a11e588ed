#include "wombatkv/types.h"

#include <algorithm>
#include <cstring>

#include "base/blake3_hash.h"
#include "base/hex.h"
#include "base/quoted.h"

namespace wombatkv {

template <size_t N, typename Tag>
Result<FixedBytes<N, Tag>> FixedBytes<N, Tag>::FromHex(std::string_view hex,
                                                       std::string_view what) {
  FixedBytes out;
  if (!HexDecode(hex, out.bytes)) {
    std::string shown(hex.substr(0, 80));
    return Status::InvalidArgument(std::string(what) + " must be exactly " +
                                   std::to_string(2 * N) + " hex digits, got \"" + shown +
                                   (hex.size() > 80 ? "...\"" : "\"") + " (" +
                                   std::to_string(hex.size()) + " chars)");
  }
  return out;
}

template <size_t N, typename Tag>
std::string FixedBytes<N, Tag>::ToHex() const {
  return HexEncode(bytes);
}

template struct FixedBytes<32, BlockKeyTag>;
template struct FixedBytes<20, ContentHashTag>;
template struct FixedBytes<12, FingerprintTag>;

ContentHash HashPayload(std::span<const uint8_t> payload) {
  Blake3Hasher h;
  h.Update(payload);
  ContentHash out;
  h.Finalize(out.bytes);
  return out;
}

ContentHash CopyAndHashPayload(std::span<const uint8_t> src, uint8_t* dst) {
  constexpr size_t kStepBytes = 64 << 10;  // fits L2 with room to spare
  Blake3Hasher h;
  for (size_t off = 0; off < src.size(); off += kStepBytes) {
    const size_t n = std::min(kStepBytes, src.size() - off);
    std::memcpy(dst + off, src.data() + off, n);
    h.Update({dst + off, n});
  }
  ContentHash out;
  h.Finalize(out.bytes);
  return out;
}

Status ValidateNamespace(std::string_view ns) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("namespace " + Quoted(ns) + " " + std::string(why) +
                                   " (allowed: [A-Za-z0-9._-]{1,64})");
  };
  if (ns.empty()) return bad("is empty");
  if (ns.size() > 64) return bad("is longer than 64 characters");
  if (ns == "." || ns == "..") return bad("is a path component");
  for (char c : ns) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return bad("contains a character outside the allowed set");
  }
  return Status::Ok();
}

namespace {
// Escapes '\\', '\n' and '=' so a value can never forge another line of the canonical form.
void AppendEscaped(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '=') out += "\\=";
    else out += c;
  }
}
void AppendField(std::string& out, std::string_view name, std::string_view value) {
  AppendEscaped(out, name);
  out += '=';
  AppendEscaped(out, value);
  out += '\n';
}
}  // namespace

std::string FingerprintSpec::Canonical() const {
  std::string out = "wombatkv.fingerprint.v1\n";
  AppendField(out, "model", model_id);
  AppendField(out, "tokenizer", tokenizer_id);
  AppendField(out, "kv_dtype", kv_dtype);
  AppendField(out, "tp", std::to_string(tensor_parallel));
  AppendField(out, "pp", std::to_string(pipeline_parallel));
  AppendField(out, "lora", lora);
  for (const auto& [k, v] : extras) AppendField(out, "x." + k, v);  // std::map: sorted
  return out;
}

Fingerprint FingerprintSpec::Digest() const {
  std::string c = Canonical();
  auto full = Blake3({reinterpret_cast<const uint8_t*>(c.data()), c.size()});
  return Fingerprint::FromBytes(std::span<const uint8_t>(full.data(), Fingerprint::kSize));
}

}  // namespace wombatkv
