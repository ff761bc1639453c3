// The operating system's answers as slabfs Statuses: the one place an errno
// becomes a Status, and the one EINTR loop. Used by engine/io (the
// container file), by tools/ (the streams and stores of import and export)
// and by fusefs/views (a picture's temporary file), which is why it needs
// nothing but include/slabfs/status.h.
//
// Thread-safe: pure functions; errno is per thread.
#ifndef SLABFS_ENGINE_IO_OS_ERROR_H_
#define SLABFS_ENGINE_IO_OS_ERROR_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "slabfs/status.h"

namespace slabfs::engine {

// A Status for a failed system call, "what: strerror(err)". The code:
//   ENOENT                                  NotFound
//   EEXIST                                  AlreadyExists
//   ENOSPC, EDQUOT                          NoSpace
//   EROFS                                   ReadOnly
//   EACCES, EPERM                           PermissionDenied
//   EISDIR, ENOTDIR, ENAMETOOLONG, ELOOP    InvalidArgument (a path that
//                                           cannot name the file meant)
//   EAGAIN                                  Busy
//   EFBIG                                   OutOfRange
//   anything else                           IOError
Status StatusFromErrno(int err, std::string_view what);

// Calls fn() again for as long as it fails with EINTR (returns -1 with
// errno EINTR), and returns its last result; errno is fn's.
template <typename Fn>
auto RetryOnEintr(Fn&& fn) -> decltype(fn()) {
  decltype(fn()) r;
  do {
    r = fn();
  } while (r == -1 && errno == EINTR);
  return r;
}

// Reads from fd (at `off`, or at its file position when there is none)
// until n bytes have arrived or the file ends; returns how many arrived.
// A failed read is StatusFromErrno(errno, what).
Result<size_t> ReadFully(int fd, void* buf, size_t n, std::string_view what,
                         std::optional<uint64_t> off = std::nullopt);

// Writes all n bytes to fd (at `off`, or at its file position), resuming
// after short writes. A failed write is StatusFromErrno(errno, what); a
// write that makes no progress is IOError.
Status WriteFully(int fd, const void* buf, size_t n, std::string_view what, std::optional<uint64_t> off = std::nullopt);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_IO_OS_ERROR_H_
