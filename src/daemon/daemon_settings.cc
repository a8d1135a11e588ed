#include "daemon/daemon_settings.h"

#include "base/setting_text.h"
#include "transport/shm/segment_layout.h"

namespace wombatkv {
namespace {

using Setter = Status (*)(DaemonSettings& s, std::string_view value);

struct Row {
  SettingDoc doc;
  Setter set;
};

// HOST:PORT with PORT 0..65535 (0 = any free port). The transport parses it fully; this catches
// the obvious mistakes at flag-parsing time with the setting's name in the message.
bool LooksLikeHostPort(std::string_view s) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  auto port = ParseUint(s.substr(colon + 1));
  return port && *port <= 65535;
}

Status SetTcp(DaemonSettings& s, std::string_view v) {
  std::vector<std::string> list;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string_view item = v.substr(start, comma == std::string_view::npos ? v.npos : comma - start);
    if (!LooksLikeHostPort(item))
      return InvalidSetting("WMBT_KV_TCP", v,
                            "HOST:PORT[,HOST:PORT...], e.g. 127.0.0.1:7070 or "
                            "[::1]:7070,0.0.0.0:7070 (port 0 = any free port)");
    list.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  s.tcp = std::move(list);
  return Status::Ok();
}

Status SetShmPrefix(DaemonSettings& s, std::string_view v) {
  Config probe;  // same rule as the clients' WMBT_KV_REMOTE_PREFIX
  if (Status st = probe.Set("WMBT_KV_REMOTE_PREFIX", v); !st.ok())
    return InvalidSetting("WMBT_KV_DAEMON_SHM_PREFIX", v,
                          "a shared-memory prefix of 1 to 64 characters from [A-Za-z0-9._-]");
  s.shm_prefix = std::string(v);
  return Status::Ok();
}

Status SetShmDataBytes(DaemonSettings& s, std::string_view v) {
  auto n = ParseByteSize(v);
  if (!n || *n < shm::kAreaBytesMin || *n > shm::kAreaBytesMax || *n % 64 != 0)
    return InvalidSetting("WMBT_KV_SHM_DATA_BYTES", v,
                          "a byte count from 1M to 1T in whole 64-byte units, e.g. 256M or 4G");
  s.shm_data_bytes = *n;
  return Status::Ok();
}

Status SetShmArenaBytes(DaemonSettings& s, std::string_view v) {
  auto n = ParseByteSize(v);
  if (!n || *n % shm::kAreaAlignBytes != 0 || *n > shm::kAreaBytesMax)
    return InvalidSetting("WMBT_KV_SHM_ARENA_BYTES", v,
                          "0 (no zero-copy gets) or a multiple of 2M up to 1T, e.g. 512M or 4G");
  s.shm_arena_bytes = *n;
  return Status::Ok();
}

Status SetShmArenas(DaemonSettings& s, std::string_view v) {
  auto n = ParseUint(v);
  if (!n || *n == 0 || *n > shm::kPayloadArenasMax)
    return InvalidSetting("WMBT_KV_SHM_ARENAS", v,
                          "an integer from 1 to " + std::to_string(shm::kPayloadArenasMax));
  s.shm_arenas = static_cast<uint32_t>(*n);
  return Status::Ok();
}

Status SetTokens(DaemonSettings& s, std::string_view v) {
  auto grants = ParseTokenGrants(v);
  if (!grants.ok()) return grants.status().WithContext("WMBT_KV_AUTH_TOKENS");
  // Across values as within one (each --auth-token is one): a token given twice would be granted
  // what its last entry says, perhaps every namespace where an earlier entry limited it.
  for (const TokenGrant& g : *grants) {
    for (const TokenGrant& earlier : s.tokens) {
      if (earlier.token == g.token) {
        return Status::InvalidArgument(
            "WMBT_KV_AUTH_TOKENS: a token is given twice (in two --auth-token flags, or after "
            "WMBT_KV_AUTH_TOKENS); give each token once with all its namespaces");
      }
    }
  }
  for (auto& g : *grants) s.tokens.push_back(std::move(g));
  return Status::Ok();
}

Status SetHttp(DaemonSettings& s, std::string_view v) {
  if (!LooksLikeHostPort(v))
    return InvalidSetting("WMBT_KV_DAEMON_HTTP", v,
                          "HOST:PORT, e.g. 127.0.0.1:9090 (port 0 = any free port)");
  s.http = std::string(v);
  return Status::Ok();
}

Status SetMaxFrame(DaemonSettings& s, std::string_view v) {
  auto n = ParseByteSize(v);
  if (!n || *n < DaemonSettings::kMaxFrameBytesMin || *n > (1ull << 32) - 1)
    return InvalidSetting("WMBT_KV_MAX_FRAME_BYTES", v,
                          "a byte count from 4K to 4294967295 (the wire carries u32 lengths), "
                          "e.g. 64M");
  s.max_frame_bytes = static_cast<uint32_t>(*n);
  return Status::Ok();
}

Status SetMillis(std::string_view name, uint64_t* out, std::string_view v) {
  auto n = ParseUint(v);
  if (!n || *n > 24ull * 3600 * 1000)
    return InvalidSetting(name, v, "milliseconds, 0 to 86400000 (a day)");
  *out = *n;
  return Status::Ok();
}

Status SetShutdownTimeout(DaemonSettings& s, std::string_view v) {
  return SetMillis("WMBT_KV_SHUTDOWN_TIMEOUT_MS", &s.shutdown_timeout_ms, v);
}

Status SetIdleTimeout(DaemonSettings& s, std::string_view v) {
  return SetMillis("WMBT_KV_IDLE_TIMEOUT_MS", &s.idle_timeout_ms, v);
}

Status SetWorkers(DaemonSettings& s, std::string_view v) {
  auto n = ParseUint(v);
  if (!n || *n == 0 || *n > DaemonSettings::kWorkersMax)
    return InvalidSetting("WMBT_KV_DAEMON_WORKERS", v,
                          "an integer from 1 to " + std::to_string(DaemonSettings::kWorkersMax));
  s.workers = static_cast<uint32_t>(*n);
  return Status::Ok();
}

Status SetTcpPoll(DaemonSettings& s, std::string_view v) {
  return SetSwitch("WMBT_KV_TCP_POLL", s.tcp_poll, v);
}

const std::vector<Row>& Table() {
  static const std::vector<Row> kTable = {
      {{"WMBT_KV_TCP", "(unset: no TCP listener)",
        "wombatkvd --tcp: TCP listen addresses, HOST:PORT[,...]; port 0 = any free port. A "
        "non-loopback address requires auth tokens."},
       SetTcp},
      {{"WMBT_KV_DAEMON_SHM_PREFIX", "(unset: no shared-memory transport)",
        "wombatkvd --prefix: shared-memory prefix clients attach to with WMBT_KV_REMOTE_PREFIX."},
       SetShmPrefix},
      {{"WMBT_KV_SHM_DATA_BYTES", "1G",
        "wombatkvd --shm-data-bytes: each shared-memory client's request area and response area "
        "(virtual; pages are allocated when touched): bounds one put batch and one get response."},
       SetShmDataBytes},
      {{"WMBT_KV_SHM_ARENA_BYTES", "1G",
        "wombatkvd --shm-arena-bytes: each namespace's payload arena (virtual; pages it touched "
        "stay resident): put payloads of 64 KiB and more are kept there and gets over shared "
        "memory pass them by reference (0 = none: gets copy)."},
       SetShmArenaBytes},
      {{"WMBT_KV_SHM_ARENAS", "8",
        "wombatkvd --shm-arenas: namespaces that get a payload arena (the first to put; gets of "
        "the others copy), 1 to 64."},
       SetShmArenas},
      {{"WMBT_KV_AUTH_TOKENS", "(unset: no tokens; loopback listeners only)",
        "wombatkvd --auth-token: accepted tokens, ';'-separated, each TOKEN or TOKEN=NS1,NS2 "
        "(limited to those namespaces).",
        true},
       SetTokens},
      {{"WMBT_KV_DAEMON_HTTP", "(unset: no HTTP endpoint)",
        "wombatkvd --http: HOST:PORT serving /healthz, /readyz and Prometheus /metrics."},
       SetHttp},
      {{"WMBT_KV_MAX_FRAME_BYTES", "1025M",
        "wombatkvd --max-frame-bytes: largest request frame body (the default, 1 GiB + 1 MiB, "
        "takes "
        "one sidecar at its 1 GiB limit); larger ones are refused before allocation and the "
        "connection is closed."},
       SetMaxFrame},
      {{"WMBT_KV_SHUTDOWN_TIMEOUT_MS", "30000",
        "wombatkvd --shutdown-timeout: on SIGTERM/SIGINT, how long running requests may finish."},
       SetShutdownTimeout},
      {{"WMBT_KV_IDLE_TIMEOUT_MS", "300000",
        "wombatkvd --idle-timeout: a TCP connection with nothing in flight that sends nothing "
        "for this long is closed (0 = never)."},
       SetIdleTimeout},
      {{"WMBT_KV_DAEMON_WORKERS", "16",
        "wombatkvd --workers: threads running requests (a durable publish holds one while it "
        "waits for L2)."},
       SetWorkers},
      {{"WMBT_KV_TCP_POLL", "1",
        "wombatkvd --tcp-poll: 1 = after a wake-up with work, a TCP event loop polls for the "
        "next request (yielding its core) before it sleeps, sparing clients the wake-up of a "
        "sleeping loop; 0 = only while one connection alone sends."},
       SetTcpPoll},
  };
  return kTable;
}

}  // namespace

const std::vector<SettingDoc>& DaemonSettingDocs() {
  static const std::vector<SettingDoc> kDocs = [] {
    std::vector<SettingDoc> docs;
    for (const Row& r : Table()) docs.push_back(r.doc);
    return docs;
  }();
  return kDocs;
}

Status DaemonSettings::Set(std::string_view name, std::string_view value) {
  for (const Row& r : Table()) {
    if (r.doc.name == name) return r.set(*this, value);
  }
  return Status::InvalidArgument("unknown daemon setting \"" + std::string(name.substr(0, 80)) +
                                 "\"");
}

Result<DaemonSettings> DaemonSettings::FromLookup(const EnvLookup& lookup) {
  DaemonSettings s;
  for (const Row& r : Table()) {
    std::string name(r.doc.name);
    auto value = lookup(name.c_str());
    if (!value || value->empty()) continue;
    WMBT_RETURN_IF_ERROR(r.set(s, *value));
  }
  return s;
}

Result<DaemonSettings> DaemonSettings::FromEnv() { return FromLookup(ProcessEnv); }

std::string DaemonSettings::Describe() const {
  std::string tcp_list;
  for (const auto& a : tcp) tcp_list += (tcp_list.empty() ? "" : ",") + a;
  std::string out;
  out += "WMBT_KV_TCP=" + tcp_list + "\n";
  out += "WMBT_KV_DAEMON_SHM_PREFIX=" + shm_prefix + "\n";
  out += "WMBT_KV_SHM_DATA_BYTES=" + std::to_string(shm_data_bytes) + "\n";
  out += "WMBT_KV_SHM_ARENA_BYTES=" + std::to_string(shm_arena_bytes) + "\n";
  out += "WMBT_KV_SHM_ARENAS=" + std::to_string(shm_arenas) + "\n";
  out += "WMBT_KV_AUTH_TOKENS=(" + std::to_string(tokens.size()) + " token(s))\n";
  out += "WMBT_KV_DAEMON_HTTP=" + http + "\n";
  out += "WMBT_KV_MAX_FRAME_BYTES=" + std::to_string(max_frame_bytes) + "\n";
  out += "WMBT_KV_SHUTDOWN_TIMEOUT_MS=" + std::to_string(shutdown_timeout_ms) + "\n";
  out += "WMBT_KV_IDLE_TIMEOUT_MS=" + std::to_string(idle_timeout_ms) + "\n";
  out += "WMBT_KV_DAEMON_WORKERS=" + std::to_string(workers) + "\n";
  out += std::string("WMBT_KV_TCP_POLL=") + (tcp_poll ? "1" : "0") + "\n";
  return out;
}

}  // namespace wombatkv
