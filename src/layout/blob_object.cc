#include "layout/blob_object.h"

#include "layout/envelope.h"

namespace wombatkv::layout {

BlobSize JudgeBlobSize(uint64_t size, uint64_t payload_len) {
  if (size == kEnvelopeHeaderBytes + payload_len) return BlobSize::kRaw;
  if (size <= kEnvelopeHeaderBytes || size > kEnvelopeHeaderBytes + payload_len) {
    return BlobSize::kWrong;
  }
  return BlobSize::kMaybeCompressed;
}

Result<bool> BlobObjectFits(ObjectStore& l2, const std::string& key, uint64_t size,
                            uint64_t payload_len, const ContentHash& hash) {
  const BlobSize judged = JudgeBlobSize(size, payload_len);
  if (judged != BlobSize::kMaybeCompressed) return judged == BlobSize::kRaw;
  WMBT_ASSIGN_OR_RETURN(ObjectData head, l2.Get(key, 0, kEnvelopeHeaderBytes));
  auto fields = ParseEnvelopeHeader(EnvelopeKind::kBlob, head.bytes->view(), key);
  if (!fields.ok()) return false;
  return fields->codec != Codec::kRaw && fields->payload_len == payload_len &&
         fields->hash == hash && kEnvelopeHeaderBytes + fields->stored_len == size;
}

}  // namespace wombatkv::layout
