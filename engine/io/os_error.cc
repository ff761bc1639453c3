#include "engine/io/os_error.h"

#include <unistd.h>

#include <cstring>
#include <string>

namespace slabfs::engine {

Status StatusFromErrno(int err, std::string_view what) {
  std::string msg = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ENOENT: return Status::NotFound(std::move(msg));
    case EEXIST: return Status::AlreadyExists(std::move(msg));
    case ENOSPC:
    case EDQUOT: return Status::NoSpace(std::move(msg));
    case EROFS: return Status::ReadOnly(std::move(msg));
    case EACCES:
    case EPERM: return Status::PermissionDenied(std::move(msg));
    case EISDIR:
    case ENOTDIR:
    case ENAMETOOLONG:
    case ELOOP: return Status::InvalidArgument(std::move(msg));
    case EAGAIN: return Status::Busy(std::move(msg));
    case EFBIG: return Status::OutOfRange(std::move(msg));
    default: return Status::IOError(std::move(msg));
  }
}

Result<size_t> ReadFully(int fd, void* buf, size_t n, std::string_view what, std::optional<uint64_t> off) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = RetryOnEintr([&] {
      return off ? ::pread(fd, p + done, n - done, static_cast<off_t>(*off + done)) : ::read(fd, p + done, n - done);
    });
    if (r < 0) return Err(StatusFromErrno(errno, what));
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status WriteFully(int fd, const void* buf, size_t n, std::string_view what, std::optional<uint64_t> off) {
  const auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = RetryOnEintr([&] {
      return off ? ::pwrite(fd, p + done, n - done, static_cast<off_t>(*off + done)) : ::write(fd, p + done, n - done);
    });
    if (w < 0) return StatusFromErrno(errno, what);
    if (w == 0) return Status::IOError(std::string(what) + ": no progress");
    done += static_cast<size_t>(w);
  }
  return Status::OK();
}

}  // namespace slabfs::engine
