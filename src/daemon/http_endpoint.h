// HttpEndpoint: the daemon's small HTTP server (cpp-httplib) for operators and Prometheus:
//   GET /healthz  200 "ok" while the process runs (liveness)
//   GET /readyz   200 "ready" once the store is open and requests are served; 503 with the
//                 reason before (opening the store, bootstrap from L2) and while shutting down
//   GET /metrics  Prometheus text (metrics_text.h)
// It never carries data-plane traffic or secrets. Runs on its own small thread pool.
//
// Thread-safety: the callbacks run on the endpoint's threads, concurrently.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "wombatkv/status.h"

namespace wombatkv {

struct HttpEndpointCallbacks {
  // Empty string = ready; otherwise why not (the 503 body).
  std::function<std::string()> not_ready_reason;
  // Empty string = healthy (/healthz 200); otherwise why not (503): the process cannot go on
  // serving writes without a restart.
  std::function<std::string()> unhealthy_reason;
  std::function<std::string()> metrics;
};

class HttpEndpoint {
 public:
  // Binds HOST:PORT (port 0 = any free port) and starts serving. InvalidArgument for a bad
  // address, Unavailable when it cannot bind.
  static Result<std::unique_ptr<HttpEndpoint>> Start(const std::string& address,
                                                     HttpEndpointCallbacks callbacks);
  ~HttpEndpoint();  // stops serving and joins its threads

  // "http://127.0.0.1:9090" as bound.
  const std::string& url() const;

  struct Impl;

 private:
  explicit HttpEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wombatkv
