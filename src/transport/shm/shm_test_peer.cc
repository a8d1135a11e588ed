// shm_test_peer: the other process of the shared-memory transport tests (shm_process_test.cc).
//   shm_test_peer daemon RUN_DIR PREFIX [GROUP]  serve TestHandler; print "ready", run until killed
//   shm_test_peer hold RUN_DIR PREFIX             attach, borrow a response payload, print
//                                                 "holding", wait
//   shm_test_peer attach RUN_DIR PREFIX [GROUP]  attach once; print "ok" or the status; exit 0 if
//                                                 attached
// GROUP: WMBT_KV_SHM_GROUP of that side.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "transport/shm/shm_channel.h"
#include "transport/shm/shm_server.h"
#include "transport/shm/shm_test_handler.h"

using namespace wombatkv;

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: shm_test_peer daemon|hold|attach RUN_DIR PREFIX [GROUP]\n");
    return 2;
  }
  const std::string role = argv[1];
  const std::string group = argc == 5 ? argv[4] : "";
  if (role == "daemon") {
    ShmServerOptions o;
    o.run_dir = argv[2];
    o.prefix = argv[3];
    o.group = group;
    o.workers = 4;
    o.layout.request_area_bytes = o.layout.response_area_bytes = 16 << 20;
    ShmServer server(ShmServer::Returning(shm_test::TestHandler), o);
    Status s = server.Start();
    if (!s.ok()) {
      std::printf("%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) ::pause();
  }
  ShmClientOptions o;
  o.run_dir = argv[2];
  o.prefix = argv[3];
  o.group = group;
  auto channel = ConnectShm(o);
  if (!channel.ok()) {
    std::printf("%s\n", channel.status().ToString().c_str());
    return 1;
  }
  if (role == "attach") {
    std::printf("ok\n");
    return 0;
  }
  wire::Message m;
  m.op = shm_test::kOpPayloadOfSize;
  std::string n = "100000";
  m.fields.assign(n.begin(), n.end());
  auto r = (*channel)->Call(std::move(m));
  if (!r.ok() || r->payloads.size() != 1) {
    std::printf("call failed: %s\n", r.status().ToString().c_str());
    return 1;
  }
  std::printf("holding\n");  // the payload's region stays borrowed until this process dies
  std::fflush(stdout);
  for (;;) ::pause();
}
