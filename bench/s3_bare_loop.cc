#include "s3_bare_loop.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <cstring>
#include <deque>

#include "bench_util.h"

namespace wombatkv::bench {
namespace {

std::string Sha256Hex(ByteView body) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(body.data(), body.size(), out, &n, EVP_sha256(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < n; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}

constexpr const char* kEmptySha =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace

struct BareS3Loop::Slot {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string url;
  ByteView body;
  size_t sent = 0;
  std::vector<uint8_t> got;  // reused: capacity stays
  size_t index = 0;
  double started = 0;

  static size_t OnRead(char* out, size_t size, size_t n, void* user) {
    auto* s = static_cast<Slot*>(user);
    const size_t take = std::min(size * n, s->body.size() - s->sent);
    std::memcpy(out, s->body.data() + s->sent, take);
    s->sent += take;
    return take;
  }
  static size_t OnWrite(char* data, size_t size, size_t n, void* user) {
    auto* s = static_cast<Slot*>(user);
    s->got.insert(s->got.end(), data, data + size * n);
    return size * n;
  }
};

BareS3Loop::BareS3Loop(const S3Server& server, size_t concurrency, bool signed_payload)
    : server_(server), signed_payload_(signed_payload) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  multi_ = curl_multi_init();
  for (size_t i = 0; i < concurrency; ++i) {
    auto s = std::make_unique<Slot>();
    s->easy = curl_easy_init();
    if (!s->easy) Die("curl_easy_init failed");
    slots_.push_back(std::move(s));
  }
}

BareS3Loop::~BareS3Loop() {
  for (auto& s : slots_) {
    curl_easy_cleanup(s->easy);
    curl_slist_free_all(s->headers);
  }
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

BareS3Loop::Outcome BareS3Loop::Put(const std::vector<std::string>& keys, ByteView body) {
  return Run(keys, body, true, body.size());
}

BareS3Loop::Outcome BareS3Loop::Get(const std::vector<std::string>& keys, size_t size) {
  return Run(keys, {}, false, size);
}

BareS3Loop::Outcome BareS3Loop::Run(const std::vector<std::string>& keys, ByteView body, bool put,
                                    size_t size) {
  CURLM* multi = static_cast<CURLM*>(multi_);
  const std::string sigv4 = "aws:amz:" + server_.region + ":s3";
  Outcome out;
  out.latencies.resize(keys.size());
  std::deque<Slot*> idle;
  for (auto& s : slots_) idle.push_back(s.get());
  size_t next = 0, done = 0;
  auto start = [&](Slot* s) {
    s->index = next++;
    s->url = server_.endpoint + "/" + server_.bucket + "/" + keys[s->index];
    s->body = body;
    s->sent = 0;
    s->got.clear();
    if (!put && size != kAnySize) s->got.reserve(size);
    curl_slist_free_all(s->headers);
    s->headers = nullptr;
    // A signing client hashes every body it sends; UNSIGNED-PAYLOAD skips that.
    const std::string sha = !put              ? kEmptySha
                            : signed_payload_ ? Sha256Hex(body)
                                              : "UNSIGNED-PAYLOAD";
    s->headers = curl_slist_append(s->headers, ("x-amz-content-sha256: " + sha).c_str());
    CURL* h = s->easy;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, s->url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, server_.access_key.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, server_.secret_key.c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, Slot::OnWrite);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    if (put) {
      curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(h, CURLOPT_READFUNCTION, Slot::OnRead);
      curl_easy_setopt(h, CURLOPT_READDATA, s);
    }
    s->started = WallSeconds();
    curl_multi_add_handle(multi, h);
  };
  const double t0 = WallSeconds();
  while (done < keys.size()) {
    while (next < keys.size() && !idle.empty()) {
      Slot* s = idle.front();
      idle.pop_front();
      start(s);
    }
    int running = 0;
    if (curl_multi_perform(multi, &running) != CURLM_OK) Die("curl_multi_perform failed");
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Slot* s = nullptr;
      for (auto& c : slots_) {
        if (c->easy == m->easy_handle) s = c.get();
      }
      const CURLcode rc = m->data.result;
      long status = 0;
      curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(multi, s->easy);
      out.latencies[s->index] = WallSeconds() - s->started;
      if (rc != CURLE_OK || status != 200 || (!put && size != kAnySize && s->got.size() != size)) {
        Die("bare loop: " + std::string(put ? "PUT " : "GET ") + keys[s->index] + ": " +
            curl_easy_strerror(rc) + ", HTTP " + std::to_string(status) + ", " +
            std::to_string(s->got.size()) + " bytes");
      }
      ++done;
      idle.push_back(s);
    }
    if (done < keys.size() && (next >= keys.size() || idle.empty())) {
      curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    }
  }
  out.wall = WallSeconds() - t0;
  return out;
}

}  // namespace wombatkv::bench
