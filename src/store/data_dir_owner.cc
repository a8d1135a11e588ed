#include "store/data_dir_owner.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace wombatkv {

namespace {
std::string& OwnerProgram() {
  static std::string program;
  return program;
}
}  // namespace

void SetOwnerProgram(std::string_view program) { OwnerProgram() = program; }

std::string DataDirOwnerNote(std::string_view program) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  if (program.empty()) program = OwnerProgram();
  const std::string name(program.empty() ? std::string_view(program_invocation_short_name)
                                         : program);
  return "pid " + std::to_string(getpid()) + " (" + name + ") on host " + host;
}

bool HeldByProgram(std::string_view message, std::string_view program) {
  return message.find(" (" + std::string(program) + ") on host ") != std::string_view::npos &&
         !NoteIsStale(message);
}

bool NoteIsStale(std::string_view message) {
  // "... is locked by pid 4242 (wombatkvd) on host h1", maybe within a longer message.
  const size_t pid_at = message.rfind("by pid ");
  const size_t host_at = message.rfind(") on host ");
  if (pid_at == std::string_view::npos || host_at == std::string_view::npos || host_at < pid_at) {
    return false;
  }
  std::string_view noted = message.substr(host_at + 10);
  noted = noted.substr(0, std::min(noted.size(), noted.find_first_of(" ,;)")));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  if (noted != host) return false;  // another host's process: unknown here
  pid_t pid = 0;
  const char* digits = message.data() + pid_at + 7;
  const auto [end, ec] = std::from_chars(digits, message.data() + message.size(), pid);
  if (ec != std::errc() || end == digits || pid <= 0) return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace wombatkv
