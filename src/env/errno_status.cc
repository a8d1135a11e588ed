#include "env/errno_status.h"

#include <string.h>

#include <cerrno>

namespace wombatkv {

std::string ErrnoText(int err) {
  // The common answer of a probe (a put's stat of a new key's path), without strerror_r's
  // message-catalog lookup.
  if (err == ENOENT) return "No such file or directory";
  char buf[128];
  // GNU strerror_r: returns a pointer to the message (maybe not `buf`); thread-safe.
  return std::string(strerror_r(err, buf, sizeof buf));
}

Status ErrnoStatus(int err, std::string_view op, const std::string& path) {
  std::string m = std::string(op) + " " + path + ": " + ErrnoText(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:  // a component of the path is a file: the path does not exist
      return Status::NotFound(std::move(m));
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return Status::ResourceExhausted(std::move(m));
    case EACCES:
    case EPERM:
    case EROFS:
    case EISDIR:
    case ENOTEMPTY:
    case EEXIST:
    case EXDEV:
    case EOPNOTSUPP:
      return Status::FailedPrecondition(std::move(m));
    case ENAMETOOLONG:
    case ELOOP:
    case EINVAL:
      return Status::InvalidArgument(std::move(m));
    case EAGAIN:
    case EINTR:
    case EBUSY:
    case ETIMEDOUT:
    case ESTALE:
    case ENOLCK:
      return Status::Unavailable(std::move(m));
    default:
      return Status::Internal(std::move(m));
  }
}

}  // namespace wombatkv
