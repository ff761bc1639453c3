#include "fusefs/views/spill_buffer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace slabfs::fusefs::views {
namespace {

// The temporary file's errors; nothing else in this folder makes syscalls.
Status FromErrno(int err, std::string_view what) {
  std::string msg = fmt::format("{}: {}", what, std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return Status::NoSpace(std::move(msg));
  return Status::IOError(std::move(msg));
}

std::string TempDir() {
  const char* d = std::getenv("TMPDIR");
  return d != nullptr && *d != '\0' ? d : "/tmp";
}

}  // namespace

SpillBuffer::~SpillBuffer() {
  if (fd_ >= 0) ::close(fd_);
}

Status SpillBuffer::Append(const void* data, size_t n) {
  memory_.append(static_cast<const char*>(data), n);
  size_ += n;
  if (fd_ < 0 && memory_.size() > kMemoryBytes) return Spill();
  if (fd_ >= 0 && memory_.size() >= kMemoryBytes) return Flush();
  return Status::OK();
}

Status SpillBuffer::Finish() {
  if (fd_ >= 0) SLABFS_RETURN_IF_ERROR(Flush());
  memory_.shrink_to_fit();
  return Status::OK();
}

Status SpillBuffer::Spill() {
  const std::string dir = TempDir();
  // O_TMPFILE: a file with no name, gone with its descriptor; where the
  // file system lacks it, a named one removed at once.
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    std::string name = dir + "/slabfs-view-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) return FromErrno(errno, fmt::format("a temporary file in {} for a picture", dir));
  fd_ = fd;
  return Flush();
}

Status SpillBuffer::Flush() {
  size_t done = 0;
  while (done < memory_.size()) {
    const ssize_t w = ::pwrite(fd_, memory_.data() + done, memory_.size() - done,
                               static_cast<off_t>(file_bytes_ + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      return FromErrno(errno, "writing a picture's temporary file");
    }
    done += static_cast<size_t>(w);
  }
  file_bytes_ += done;
  memory_.clear();
  return Status::OK();
}

Result<size_t> SpillBuffer::ReadAt(uint64_t off, size_t n, char* out) const {
  if (off >= size_) return size_t{0};
  n = static_cast<size_t>(std::min<uint64_t>(n, size_ - off));
  if (fd_ < 0) {
    std::memcpy(out, memory_.data() + off, n);
    return n;
  }
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Err(FromErrno(errno, "reading a picture's temporary file"));
    }
    if (r == 0) return Err(Status::IOError("a picture's temporary file is shorter than written"));
    done += static_cast<size_t>(r);
  }
  return n;
}

}  // namespace slabfs::fusefs::views
