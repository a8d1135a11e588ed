#include "daemon/http_endpoint.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <thread>

#include "base/thread_name.h"
#include "transport/tcp/sockets.h"

namespace wombatkv {

struct HttpEndpoint::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> listen_returned{false};
  std::string url;
  HttpEndpointCallbacks callbacks;
};

HttpEndpoint::HttpEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpEndpoint::~HttpEndpoint() {
  // stop() only acts on a running server: wait until the thread got that far (or gave up), so
  // a quick start-stop cannot leave listen_after_bind() blocked for ever.
  while (!impl_->server.is_running() && !impl_->listen_returned.load()) std::this_thread::yield();
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

const std::string& HttpEndpoint::url() const { return impl_->url; }

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const std::string& address,
                                                          HttpEndpointCallbacks callbacks) {
  auto hp = tcp::ParseHostPort(address, /*allow_port_zero=*/true);
  if (!hp.ok()) return hp.status().WithContext("--http");
  // A name that does not resolve is said as such (the bind below can only say it failed).
  if (auto resolved = tcp::Resolve(*hp, /*passive=*/true); !resolved.ok()) {
    return resolved.status().WithContext("cannot serve HTTP on " + address + " (--http)");
  }
  auto impl = std::make_unique<Impl>();
  impl->callbacks = std::move(callbacks);
  Impl* self = impl.get();
  // Scrapes and probes are rare and cheap, but an idle connection holds a thread until the read
  // timeout below: with two threads, two idle keep-alive scrapers (or a few silent connects)
  // held /healthz past a 1 s probe timeout. Eight, and one request per connection.
  impl->server.new_task_queue = [] { return new httplib::ThreadPool(8); };
  impl->server.set_keep_alive_max_count(1);
  // An idle keep-alive connection (a Prometheus scraper's) holds a pool thread in a read until
  // this timeout, and the stop waits for it: 1 s rather than httplib's 5. A probe that connects
  // and sends nothing is let go after 1 s.
  impl->server.set_keep_alive_timeout(1);
  impl->server.set_read_timeout(1, 0);
  // cpp-httplib sets SO_REUSEPORT by default, which lets a second daemon bind a port this one
  // serves (the kernel then splits probes between the two). SO_REUSEADDR alone still allows a
  // restart while old connections sit in TIME_WAIT.
  impl->server.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl->server.Get("/healthz", [self](const httplib::Request&, httplib::Response& res) {
    std::string why = self->callbacks.unhealthy_reason ? self->callbacks.unhealthy_reason() : "";
    if (why.empty()) {
      res.set_content("ok\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content(why + "\n", "text/plain");
    }
  });
  impl->server.Get("/readyz", [self](const httplib::Request&, httplib::Response& res) {
    std::string why = self->callbacks.not_ready_reason();
    if (why.empty()) {
      res.set_content("ready\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content(why + "\n", "text/plain");
    }
  });
  impl->server.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->callbacks.metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  int port = hp->port;
  if (port == 0) {
    port = impl->server.bind_to_any_port(hp->host);
    if (port < 0) port = 0;
  } else if (!impl->server.bind_to_port(hp->host, port)) {
    port = 0;
  }
  if (port == 0) {
    return Status::Unavailable("cannot serve HTTP on " + address +
                               ": bind failed (address in use or not local? choose another "
                               "--http address)");
  }
  tcp::HostPort bound = *hp;
  bound.port = static_cast<uint16_t>(port);
  impl->url = "http://" + bound.ToString();
  impl->thread = StartNamedThread("wmbt-http", [self] {
    self->server.listen_after_bind();
    self->listen_returned.store(true);
  });
  return std::unique_ptr<HttpEndpoint>(new HttpEndpoint(std::move(impl)));
}

}  // namespace wombatkv
