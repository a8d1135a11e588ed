#include "base/thread_name.h"

#include <pthread.h>

namespace wombatkv {

// Linux's limit: 16 bytes with the terminating NUL.
constexpr size_t kThreadNameBytesMax = 15;

namespace {
void Name(pthread_t thread, std::string_view name) {
  const std::string kept(name.substr(0, kThreadNameBytesMax));
  (void)::pthread_setname_np(thread, kept.c_str());
}
}  // namespace

void NameThisThread(std::string_view name) { Name(::pthread_self(), name); }

void NameThread(std::thread& thread, std::string_view name) { Name(thread.native_handle(), name); }

std::string ThisThreadName() {
  char buf[kThreadNameBytesMax + 1] = {};
  if (::pthread_getname_np(::pthread_self(), buf, sizeof buf) != 0) return "";
  return buf;
}

}  // namespace wombatkv
