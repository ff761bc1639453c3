// The container file: the one place the engine makes file syscalls. Their
// errors become Statuses through engine/io/os_error.h.
//
// File is an interface so that tests can substitute an in-memory file or one
// that forgets unsynced writes on a simulated crash (tests/testutil/).
// Implementations are safe for concurrent positional reads and writes to
// disjoint ranges; Sync and Truncate may run concurrently with reads.
#ifndef SLABFS_ENGINE_IO_FILE_H_
#define SLABFS_ENGINE_IO_FILE_H_

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "slabfs/status.h"

namespace slabfs::engine {

class File {
 public:
  virtual ~File() = default;

  // Reads exactly n bytes at off. A read that reaches past the end of the
  // file is Corruption ("truncated"), since every read the engine makes is
  // of something a committed structure says is there.
  virtual Status ReadAt(uint64_t off, void* buf, size_t n) = 0;
  // Scatter read of exactly the iovecs' total length at off.
  virtual Status ReadvAt(uint64_t off, const struct iovec* iov, int iovcnt);
  virtual Status WriteAt(uint64_t off, const void* buf, size_t n) = 0;
  // Gather write of the iovecs' total length at off.
  virtual Status WritevAt(uint64_t off, const struct iovec* iov, int iovcnt);
  // Hints that [off, off+len) will be read soon (starts read-ahead). Has no
  // effect on what any call returns.
  virtual void WillNeed(uint64_t /*off*/, uint64_t /*len*/) {}
  // Makes every completed write durable (fdatasync).
  virtual Status Sync() = 0;
  virtual Result<uint64_t> Size() = 0;
  virtual Status Truncate(uint64_t size) = 0;

  // Advisory byte-range locks on [off, off + len) for this open file: OFD
  // locks, released when the file is closed and conflicting with every
  // other open of the file, in this process too. Nothing is read or written
  // there, and a range may lie far past the end of the file. A lock
  // replaces this open file's own lock on the same bytes.
  // TryLock is Busy when another open file holds a conflicting lock, and
  // NotSupported where the filesystem keeps no locks.
  virtual Status TryLock(uint64_t /*off*/, uint64_t /*len*/, bool /*exclusive*/) { return Status::OK(); }
  virtual Status Unlock(uint64_t /*off*/, uint64_t /*len*/) { return Status::OK(); }
  // The start of the lowest lock another open file holds inside
  // [off, off + len) (any lock: shared or exclusive), or nullopt.
  virtual Result<std::optional<uint64_t>> LowestLockIn(uint64_t /*off*/, uint64_t /*len*/) {
    return std::optional<uint64_t>();
  }

  virtual const std::string& name() const = 0;
  // The descriptor of an open file of the operating system's, for callers
  // that move its bytes without reading them (splice); -1 where there is
  // none (files in memory, in the tests).
  virtual int native_fd() const { return -1; }
};

struct OpenFileOptions {
  bool writable = false;
  bool create = false;  // O_CREAT|O_EXCL
};

Result<std::unique_ptr<File>> OpenPosixFile(const std::string& path, const OpenFileOptions& o);

// Creates `path` so that it never exists half made and an existing file is
// never clobbered: a temporary file beside it is filled by `init` and
// synced, then linked into place (AlreadyExists if the name is taken), and
// the directory is synced.
Status CreateFileAtomically(const std::string& path, const std::function<Status(File*)>& init);

struct DiskSpace {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};
// Space on the filesystem that holds path (statvfs).
Result<DiskSpace> DiskSpaceOf(const std::string& path);

// Whether `path` lies on a network or FUSE filesystem (NFS, SMB/CIFS,
// Ceph, Lustre, GPFS, AFS, a FUSE mount such as sshfs), where fcntl locks
// may not reach the processes of other hosts (statfs f_type).
Result<bool> OnNetworkFilesystem(const std::string& path);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_IO_FILE_H_
