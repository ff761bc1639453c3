#include "engine/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <random>
#include <vector>

#include "engine/io/os_error.h"

namespace slabfs::engine {

// The generic scatter/gather forms: one positional call per iovec.
Status File::ReadvAt(uint64_t off, const struct iovec* iov, int iovcnt) {
  for (int i = 0; i < iovcnt; ++i) {
    SLABFS_RETURN_IF_ERROR(ReadAt(off, iov[i].iov_base, iov[i].iov_len));
    off += iov[i].iov_len;
  }
  return Status::OK();
}

Status File::WritevAt(uint64_t off, const struct iovec* iov, int iovcnt) {
  for (int i = 0; i < iovcnt; ++i) {
    SLABFS_RETURN_IF_ERROR(WriteAt(off, iov[i].iov_base, iov[i].iov_len));
    off += iov[i].iov_len;
  }
  return Status::OK();
}

namespace {

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }

  Status ReadAt(uint64_t off, void* buf, size_t n) override {
    SLABFS_ASSIGN_OR_RETURN(size_t got, ReadFully(fd_, buf, n, "read " + path_, off));
    if (got < n) return Truncated(off + got, n - got);
    return Status::OK();
  }

  Status ReadvAt(uint64_t off, const struct iovec* iov, int iovcnt) override {
    return Vectored(off, iov, iovcnt, /*write=*/false);
  }

  Status WriteAt(uint64_t off, const void* buf, size_t n) override {
    return WriteFully(fd_, buf, n, "write " + path_, off);
  }

  Status WritevAt(uint64_t off, const struct iovec* iov, int iovcnt) override {
    return Vectored(off, iov, iovcnt, /*write=*/true);
  }

  void WillNeed(uint64_t off, uint64_t len) override {
    (void)::posix_fadvise(fd_, static_cast<off_t>(off), static_cast<off_t>(len), POSIX_FADV_WILLNEED);
  }

  Status Sync() override {
    if (RetryOnEintr([&] { return ::fdatasync(fd_); }) != 0) return StatusFromErrno(errno, "sync " + path_);
    return Status::OK();
  }

  Result<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Err(StatusFromErrno(errno, "stat " + path_));
    return static_cast<uint64_t>(st.st_size);
  }

  Status Truncate(uint64_t size) override {
    if (RetryOnEintr([&] { return ::ftruncate(fd_, static_cast<off_t>(size)); }) != 0)
      return StatusFromErrno(errno, "truncate " + path_);
    return Status::OK();
  }

  Status TryLock(uint64_t off, uint64_t len, bool exclusive) override {
    struct flock fl = Range(exclusive ? F_WRLCK : F_RDLCK, off, len);
    if (RetryOnEintr([&] { return ::fcntl(fd_, F_OFD_SETLK, &fl); }) != 0) {
      if (errno == EAGAIN || errno == EACCES) return Status::Busy(path_ + " is locked by another open");
      if (errno == ENOLCK || errno == EINVAL || errno == EOPNOTSUPP) {
        return Status::NotSupported(path_ + ": the filesystem keeps no byte-range locks");
      }
      return StatusFromErrno(errno, "lock " + path_);
    }
    return Status::OK();
  }

  Status Unlock(uint64_t off, uint64_t len) override {
    struct flock fl = Range(F_UNLCK, off, len);
    if (RetryOnEintr([&] { return ::fcntl(fd_, F_OFD_SETLK, &fl); }) != 0)
      return StatusFromErrno(errno, "unlock " + path_);
    return Status::OK();
  }

  Result<std::optional<uint64_t>> LowestLockIn(uint64_t off, uint64_t len) override {
    // F_OFD_GETLK reports one conflicting lock, not necessarily the lowest:
    // look again below each one found.
    std::optional<uint64_t> lowest;
    while (len > 0) {
      struct flock fl = Range(F_WRLCK, off, len);
      if (RetryOnEintr([&] { return ::fcntl(fd_, F_OFD_GETLK, &fl); }) != 0)
        return Err(StatusFromErrno(errno, "test the locks of " + path_));
      if (fl.l_type == F_UNLCK) break;
      const uint64_t start = std::max<uint64_t>(static_cast<uint64_t>(fl.l_start), off);
      lowest = start;
      len = start - off;
    }
    return lowest;
  }

  const std::string& name() const override { return path_; }
  int native_fd() const override { return fd_; }

 private:
  static struct flock Range(short type, uint64_t off, uint64_t len) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = static_cast<off_t>(off);
    fl.l_len = static_cast<off_t>(len);
    return fl;
  }

  Status Truncated(uint64_t off, size_t n) {
    struct stat st;
    uint64_t size = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    return Status::Corruption(path_ + " is truncated: needed " + std::to_string(n) + " bytes at offset " +
                              std::to_string(off) + ", file has " + std::to_string(size));
  }

  // preadv/pwritev in batches of IOV_MAX, resuming after short transfers.
  Status Vectored(uint64_t off, const struct iovec* iov, int iovcnt, bool write) {
    std::vector<struct iovec> v(iov, iov + iovcnt);
    size_t i = 0;
    while (i < v.size()) {
      if (v[i].iov_len == 0) {
        ++i;
        continue;
      }
      int n = static_cast<int>(std::min<size_t>(v.size() - i, IOV_MAX));
      const ssize_t r = RetryOnEintr([&] {
        return write ? ::pwritev(fd_, &v[i], n, static_cast<off_t>(off))
                     : ::preadv(fd_, &v[i], n, static_cast<off_t>(off));
      });
      if (r < 0) return StatusFromErrno(errno, std::string(write ? "write " : "read ") + path_);
      if (r == 0) {
        if (!write) return Truncated(off, v[i].iov_len);
        return Status::IOError("write " + path_ + ": no progress");
      }
      off += static_cast<uint64_t>(r);
      auto left = static_cast<size_t>(r);
      while (left > 0 && i < v.size()) {
        if (left >= v[i].iov_len) {
          left -= v[i].iov_len;
          ++i;
        } else {
          v[i].iov_base = static_cast<char*>(v[i].iov_base) + left;
          v[i].iov_len -= left;
          left = 0;
        }
      }
    }
    return Status::OK();
  }

  std::string path_;
  int fd_;
};

}  // namespace

Result<std::unique_ptr<File>> OpenPosixFile(const std::string& path, const OpenFileOptions& o) {
  int flags = O_CLOEXEC | (o.writable ? O_RDWR : O_RDONLY);
  if (o.create) flags |= O_CREAT | O_EXCL;
  const int fd = RetryOnEintr([&] { return ::open(path.c_str(), flags, 0644); });
  if (fd < 0) return Err(StatusFromErrno(errno, path));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Err(StatusFromErrno(e, path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Err(Status::InvalidArgument(path + " is not a regular file"));
  }
  return std::unique_ptr<File>(new PosixFile(path, fd));
}

Status CreateFileAtomically(const std::string& path, const std::function<Status(File*)>& init) {
  std::random_device rd;
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  // The temporary name is ours, not the caller's: failures name `path`. It
  // lies in the same directory, so the reason (no such directory, no
  // permission, a full disk) is the same.
  const int tmp_fd = RetryOnEintr([&] { return ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644); });
  if (tmp_fd < 0) return StatusFromErrno(errno, path);
  std::unique_ptr<File> file(new PosixFile(path, tmp_fd));
  Status s = init(file.get());
  if (s.ok()) s = file->Sync();
  file.reset();
  if (s.ok() && ::link(tmp.c_str(), path.c_str()) != 0) s = StatusFromErrno(errno, path);
  ::unlink(tmp.c_str());
  if (!s.ok()) return s;
  // Make the new name durable.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  return Status::OK();
}

Result<DiskSpace> DiskSpaceOf(const std::string& path) {
  struct statvfs sv;
  if (::statvfs(path.c_str(), &sv) != 0) return Err(StatusFromErrno(errno, "statvfs " + path));
  DiskSpace d;
  d.total_bytes = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
  d.free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
  return d;
}

Result<bool> OnNetworkFilesystem(const std::string& path) {
  struct statfs sf;
  if (::statfs(path.c_str(), &sf) != 0) return Err(StatusFromErrno(errno, "statfs " + path));
  // Magic numbers from linux/magic.h and the filesystems' own headers.
  switch (static_cast<uint64_t>(sf.f_type)) {
    case 0x6969:      // NFS
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x517B:      // SMB
    case 0x00C36400:  // Ceph
    case 0x0BD00BD0:  // Lustre
    case 0x47504653:  // GPFS
    case 0x5346414F:  // AFS
    case 0x65735546:  // FUSE (sshfs, s3fs, ...)
    case 0x013111A8:  // IBRIX
    case 0x19830326:  // BeeGFS
      return true;
    default: return false;
  }
}

}  // namespace slabfs::engine
