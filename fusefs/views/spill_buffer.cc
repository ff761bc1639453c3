#include "fusefs/views/spill_buffer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "engine/io/os_error.h"

namespace slabfs::fusefs::views {
namespace {

// The temporary file's errors (nothing else in this folder makes syscalls),
// as engine/io/os_error.h made them: a full disk stays NoSpace, anything
// else becomes an I/O error, since the reader of a picture never named this
// file (a read-only TMPDIR must not answer EROFS to a read).
Status ScratchError(Status s) {
  if (s.ok() || s.code() == Code::kNoSpace) return s;
  return Status::IOError(s.message());
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
  if (fd < 0)
    return ScratchError(engine::StatusFromErrno(errno, fmt::format("a temporary file in {} for a picture", dir)));
  fd_ = fd;
  return Flush();
}

Status SpillBuffer::Flush() {
  SLABFS_RETURN_IF_ERROR(ScratchError(
      engine::WriteFully(fd_, memory_.data(), memory_.size(), "writing a picture's temporary file", file_bytes_)));
  file_bytes_ += memory_.size();
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
  auto got = engine::ReadFully(fd_, out, n, "reading a picture's temporary file", off);
  if (!got) return Err(ScratchError(got.error()));
  if (*got < n) return Err(Status::IOError("a picture's temporary file is shorter than written"));
  return n;
}

}  // namespace slabfs::fusefs::views
