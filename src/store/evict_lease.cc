#include "store/evict_lease.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>

#include "base/endian.h"
#include "base/hex.h"
#include "store/data_dir_owner.h"

namespace wombatkv {
namespace {

constexpr std::string_view kHeader = "wombatkv eviction lease v1\n";
constexpr std::string_view kSeatHeader = "wombatkv seat v1 created_us ";
constexpr std::string_view kSeatNonce = " nonce ";

// The value of "<name> <value>\n" in `text`, or nothing.
std::optional<std::string_view> Field(std::string_view text, std::string_view name) {
  const std::string prefix = "\n" + std::string(name) + " ";
  const size_t at = text.find(prefix);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t from = at + prefix.size();
  const size_t end = text.find('\n', from);
  if (end == std::string_view::npos) return std::nullopt;
  return text.substr(from, end - from);
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

std::string EncodeEvictLease(const EvictLeaseState& lease) {
  return std::string(kHeader) + "holder " + lease.holder + "\nexpires_us " +
         std::to_string(lease.expires_us) + "\n";
}

std::optional<EvictLeaseState> DecodeEvictLease(std::string_view text) {
  if (!text.starts_with(kHeader)) return std::nullopt;
  const std::string_view body = text.substr(kHeader.size() - 1);  // keeps the '\n' before a field
  auto holder = Field(body, "holder");
  auto expires = Field(body, "expires_us");
  if (!holder || holder->empty() || !expires) return std::nullopt;
  EvictLeaseState out;
  out.holder = std::string(*holder);
  auto [end, ec] =
      std::from_chars(expires->data(), expires->data() + expires->size(), out.expires_us);
  if (ec != std::errc() || end != expires->data() + expires->size()) return std::nullopt;
  return out;
}

bool EvictLease::Hold() {
  const uint64_t now = clock_->WallMicros();
  if (mine_ && now + duration_us_ / 2 < expires_us_) return true;
  if (!mine_ && now < other_until_us_) return false;
  auto got = l2_->Get(key_);
  PutOptions put_options{PutMode::kIfAbsent, {}};
  if (got.ok()) {
    const auto lease = DecodeEvictLease(AsChars(got->bytes->view()));
    // A lease running more than twice its duration past our clock was written by a clock far
    // ahead of ours (beyond the skew leases allow): a holder that died so would block eviction
    // until then. Taken over as damaged.
    const bool far_ahead = lease && lease->expires_us > now + 2 * duration_us_;
    if (lease && lease->holder != holder_ && lease->expires_us > now && !far_ahead) {
      mine_ = false;
      other_holder_ = lease->holder;
      other_until_us_ = std::min(lease->expires_us, now + duration_us_);
      return false;
    }
    // Ours (a renewal, or a put whose answer was lost), lapsed, or damaged: replace that version.
    put_options = PutOptions{PutMode::kIfMatch, got->etag};
  } else if (!got.status().IsNotFound()) {
    return Still(clock_->WallMicros());  // the read may have taken long
  }
  const uint64_t expires = now + duration_us_;
  const std::string text = EncodeEvictLease({holder_, expires});
  auto put = l2_->Put(key_, {AsBytes(text)}, put_options);
  if (put.ok()) {
    mine_ = true;
    expires_us_ = expires;
    other_holder_.clear();
    other_until_us_ = 0;
    // Its expiry counts from before the read, as other hosts may count it: retries that took
    // longer than the lease leave nothing of it.
    return Still(clock_->WallMicros());
  }
  if (put.status().IsConflict()) {  // another host took or renewed it first: read it next pass
    mine_ = false;
    return false;
  }
  return Still(clock_->WallMicros());
}

std::string EvictLeaseHolder(const std::string& data_dir, std::string_view seat) {
  static std::atomic<uint64_t> opened{0};
  std::string holder = data_dir.empty() ? DataDirOwnerNote() + " #" + std::to_string(++opened)
                                        : HostName() + ":" + data_dir;
  if (!data_dir.empty() && !seat.empty()) holder += " (" + std::string(seat) + ")";
  std::replace(holder.begin(), holder.end(), '\n', '?');  // one line in the lease
  return holder;
}

Result<std::string> DataDirSeat(FileSystem* fs, Clock* clock, Random* random,
                                const std::string& data_dir) {
  const std::string path = data_dir + "/" + std::string(kDataDirSeatFile);
  auto read = fs->ReadFile(path, 0, kToEnd);
  if (read.ok()) {
    std::string_view text = AsChars((*read)->view());
    if (text.starts_with(kSeatHeader) && text.ends_with('\n')) {
      text.remove_prefix(kSeatHeader.size());
      text.remove_suffix(1);
      // "<µs>" (marks made before session 56) or "<µs> nonce <16 hex digits>".
      const std::string_view us = text.substr(0, text.find(' '));
      const std::string_view rest = text.substr(us.size());
      uint64_t value = 0;
      auto [end, ec] = std::from_chars(us.data(), us.data() + us.size(), value);
      const bool us_ok = ec == std::errc() && end == us.data() + us.size() && !us.empty();
      if (us_ok && rest.empty()) return "seat " + std::string(us);
      uint8_t nonce[8];
      if (us_ok && rest.starts_with(kSeatNonce) &&
          HexDecode(rest.substr(kSeatNonce.size()), nonce)) {
        return "seat " + std::string(us) + "-" + std::string(rest.substr(kSeatNonce.size()));
      }
    }
  } else if (!read.status().IsNotFound()) {
    return read.status().WithContext("reading " + path);
  }
  // None yet, or damaged (then replaced: a lease taken under the old mark lapses once). The
  // nonce tells apart two marks made in the same microsecond (containers started together).
  const std::string us = std::to_string(clock->WallMicros());
  uint8_t bytes[8];
  StoreLe64(bytes, random->Next64());
  const std::string nonce = HexEncode(bytes);
  const std::string text = std::string(kSeatHeader) + us + std::string(kSeatNonce) + nonce + "\n";
  if (Status s = fs->WriteFileAtomic(path, {AsBytes(text)}, /*sync=*/true); !s.ok()) {
    return s.WithContext("writing " + path);
  }
  return "seat " + us + "-" + nonce;
}

}  // namespace wombatkv
