// BareS3Loop: the baseline of s3_bench — the least a client can do to PUT or GET whole objects on
// an S3 server at a given concurrency: one libcurl multi handle driving `concurrency` easy handles
// that keep their connections, each request signed by libcurl's CURLOPT_AWS_SIGV4 exactly as the
// server requires (with the x-amz-content-sha256 header libcurl 7.88 does not add itself). No
// retries, no pooling logic, no error mapping, no buffer per response (each handle reuses one).
//
// `signed_payload` picks the payload-hash policy, to match S3ObjectStore's: the SHA-256 of each
// body (computed per request, as a signing client must) or UNSIGNED-PAYLOAD.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wombatkv/buffer.h"

namespace wombatkv::bench {

struct S3Server {
  std::string name, endpoint, bucket, region, access_key, secret_key;
};

class BareS3Loop {
 public:
  BareS3Loop(const S3Server& server, size_t concurrency, bool signed_payload);
  ~BareS3Loop();
  BareS3Loop(const BareS3Loop&) = delete;
  BareS3Loop& operator=(const BareS3Loop&) = delete;

  struct Outcome {
    double wall = 0;                // seconds, first request sent to last answer
    std::vector<double> latencies;  // seconds, per request
  };
  // PUTs `body` to every key (path-style: endpoint/bucket/key), `concurrency` in flight. Dies
  // (bench::Die) on any answer but 200.
  Outcome Put(const std::vector<std::string>& keys, ByteView body);
  // GETs every key whole; dies unless each answer is 200 with exactly `size` bytes (any size
  // with kAnySize).
  static constexpr size_t kAnySize = SIZE_MAX;
  Outcome Get(const std::vector<std::string>& keys, size_t size);

 private:
  struct Slot;
  Outcome Run(const std::vector<std::string>& keys, ByteView body, bool put, size_t size);
  S3Server server_;
  bool signed_payload_;
  void* multi_;  // CURLM*
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace wombatkv::bench
