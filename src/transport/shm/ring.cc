#include "transport/shm/ring.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/check.h"
#include "wire/frame.h"

namespace wombatkv::shm {
namespace {

uint64_t AlignUp(uint64_t v) { return (v + kPayloadAlignBytes - 1) & ~uint64_t{kPayloadAlignBytes - 1}; }

// Lays the payload table then the fields into `out` (body_bytes long).
void WriteBody(uint8_t* out, const wire::Message& m, const MessagePlan& plan,
               uint64_t region_offset) {
  for (size_t i = 0; i < m.payloads.size(); ++i) {
    PayloadRef ref{region_offset + plan.payload_offsets[i], m.payloads[i].size, 0, 0};
    if (!plan.shared.empty() && plan.shared[i].arena) ref = plan.shared[i];
    std::memcpy(out + i * sizeof ref, &ref, sizeof ref);
  }
  if (!m.fields.empty())
    std::memcpy(out + m.payloads.size() * sizeof(PayloadRef), m.fields.data(), m.fields.size());
}

// The highest Code value (status.h); a test pins it so a new code cannot be rejected here.
constexpr uint8_t kCodeMax = static_cast<uint8_t>(Code::kPermissionDenied);

Status Bad(const std::string& what) {
  return Status::InvalidArgument("malformed shared-memory message: " + what);
}

// True when [offset, offset + bytes) lies inside [0, area_bytes).
bool InArea(uint64_t offset, uint64_t bytes, uint64_t area_bytes) {
  return offset <= area_bytes && bytes <= area_bytes - offset;
}

}  // namespace

MessagePlan PlanMessage(const wire::Message& m, uint32_t slot_bytes,
                        std::vector<PayloadRef> shared) {
  WMBT_CHECK(shared.empty() || shared.size() == m.payloads.size());
  MessagePlan plan;
  plan.body_bytes = m.payloads.size() * sizeof(PayloadRef) + m.fields.size();
  plan.body_inline = plan.body_bytes <= InlineBodyBytesMax(slot_bytes);
  uint64_t at = plan.body_inline ? 0 : AlignUp(plan.body_bytes);
  plan.payload_offsets.reserve(m.payloads.size());
  for (size_t i = 0; i < m.payloads.size(); ++i) {
    plan.payload_offsets.push_back(at);
    if (!shared.empty() && shared[i].arena) {
      plan.shared_count++;
      continue;
    }
    at += AlignUp(m.payloads[i].size);
  }
  plan.shared = std::move(shared);
  plan.region_bytes = at;
  return plan;
}

void WriteRegion(const wire::Message& m, const MessagePlan& plan, uint8_t* region,
                 uint64_t region_offset) {
  if (!plan.body_inline) WriteBody(region, m, plan, region_offset);
  for (size_t i = 0; i < m.payloads.size(); ++i) {
    const bool shared = !plan.shared.empty() && plan.shared[i].arena;
    if (m.payloads[i].size && !shared)
      std::memcpy(region + plan.payload_offsets[i], m.payloads[i].data, m.payloads[i].size);
  }
}

void WriteSlot(uint8_t* slot, const wire::Message& m, const MessagePlan& plan,
               uint64_t region_offset, uint64_t release_token) {
  SlotHeader h{};
  h.id = m.id;
  h.op = m.op;
  h.flags = m.flags;
  h.kind = static_cast<uint8_t>(SlotKind::kMessage);
  h.body_spilled = plan.body_inline ? 0 : 1;
  h.payload_count = static_cast<uint32_t>(m.payloads.size());
  h.fields_bytes = m.fields.size();
  h.region_offset = plan.region_bytes ? region_offset : 0;
  h.region_bytes = plan.region_bytes;
  h.release_token = release_token;
  std::memcpy(slot, &h, sizeof h);
  if (plan.body_inline) WriteBody(slot + sizeof h, m, plan, region_offset);
}

void WriteErrorSlot(uint8_t* slot, uint32_t slot_bytes, uint64_t id, uint16_t op,
                    const Status& status) {
  WMBT_CHECK(!status.ok());
  const std::string& text = status.message();
  const uint64_t n = std::min<uint64_t>(text.size(), InlineBodyBytesMax(slot_bytes));
  SlotHeader h{};
  h.id = id;
  h.op = op;
  h.flags = wire::kFlagResponse;
  h.kind = static_cast<uint8_t>(SlotKind::kError);
  h.code = static_cast<uint8_t>(status.code());
  h.fields_bytes = n;
  std::memcpy(slot, &h, sizeof h);
  std::memcpy(slot + sizeof h, text.data(), n);
}

Result<SlotMessage> ReadSlot(const uint8_t* slot, uint32_t slot_bytes, const uint8_t* area,
                             uint64_t area_bytes, uint32_t arenas_max, uint64_t fields_max) {
  SlotMessage out;
  SlotHeader& h = out.header;
  std::memcpy(&h, slot, sizeof h);  // one copy: every check below is on private memory
  const uint64_t inline_max = InlineBodyBytesMax(slot_bytes);

  if (h.kind == static_cast<uint8_t>(SlotKind::kError)) {
    if (h.fields_bytes > inline_max) return Bad("error text longer than its slot");
    if (h.code == 0 || h.code > kCodeMax)
      return Bad("unknown status code " + std::to_string(h.code));
    out.error = Status(static_cast<Code>(h.code),
                       std::string(reinterpret_cast<const char*>(slot + sizeof h), h.fields_bytes));
    return out;
  }
  if (h.kind != static_cast<uint8_t>(SlotKind::kMessage))
    return Bad("unknown slot kind " + std::to_string(h.kind));
  if (h.payload_count > wire::kMaxPayloadsPerMessage)
    return Bad(std::to_string(h.payload_count) + " payloads (the limit is " +
               std::to_string(wire::kMaxPayloadsPerMessage) + ")");
  if (h.region_bytes && !InArea(h.region_offset, h.region_bytes, area_bytes))
    return Bad("region outside the data area");
  const uint64_t table_bytes = uint64_t{h.payload_count} * sizeof(PayloadRef);
  if (h.fields_bytes > area_bytes) return Bad("fields longer than the data area");
  if (h.fields_bytes > fields_max)
    return Bad(std::to_string(h.fields_bytes) + " bytes of fields (the limit is " +
               std::to_string(fields_max) + ")");
  const uint64_t body_bytes = table_bytes + h.fields_bytes;

  const uint8_t* body;
  if (h.body_spilled == 0) {
    if (body_bytes > inline_max) return Bad("inline body longer than its slot");
    body = slot + sizeof h;
  } else if (h.body_spilled == 1) {
    if (body_bytes > h.region_bytes) return Bad("spilled body longer than its region");
    body = area + h.region_offset;
  } else {
    return Bad("bad spill flag");
  }
  out.payloads.resize(h.payload_count);
  if (table_bytes) std::memcpy(out.payloads.data(), body, table_bytes);
  out.fields.assign(body + table_bytes, body + body_bytes);
  for (const PayloadRef& p : out.payloads) {
    if (p.arena > arenas_max) return Bad("payload in unknown arena " + std::to_string(p.arena));
    if (p.arena == 0 && !InArea(p.offset, p.bytes, area_bytes))
      return Bad("payload outside the data area");
  }
  return out;
}

}  // namespace wombatkv::shm
