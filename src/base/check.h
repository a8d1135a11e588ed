// Always-on and debug assertions. WMBT_CHECK guards anything whose failure could serve wrong bytes
// or lose data; it is never compiled out. WMBT_DCHECK is for costly checks (debug builds only).
#pragma once

namespace wombatkv {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, const char* msg);
}

#define WMBT_CHECK(cond)                                                     \
  do {                                                                       \
    if (__builtin_expect(!(cond), 0))                                        \
      ::wombatkv::CheckFailed(__FILE__, __LINE__, #cond, nullptr);           \
  } while (0)

#define WMBT_CHECK_MSG(cond, msg)                                            \
  do {                                                                       \
    if (__builtin_expect(!(cond), 0))                                        \
      ::wombatkv::CheckFailed(__FILE__, __LINE__, #cond, msg);               \
  } while (0)

#ifdef NDEBUG
#define WMBT_DCHECK(cond) \
  do {                    \
  } while (0)
#else
#define WMBT_DCHECK(cond) WMBT_CHECK(cond)
#endif
