#include "store/data_dir_owner.h"

#include <errno.h>
#include <unistd.h>

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
  return message.find(" (" + std::string(program) + ") on host ") != std::string_view::npos;
}

}  // namespace wombatkv
