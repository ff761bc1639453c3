#include "tools/byte_stream.h"

#include <cerrno>
#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "engine/io/os_error.h"

namespace slabfs::tools {
namespace fs = boost::filesystem;

bool IsSameFile(const std::string& a, const std::string& b) {
  boost::system::error_code ec;
  bool same = fs::equivalent(fs::path(a), fs::path(b), ec);
  return !ec && same;
}

std::string TempPathNextTo(const std::string& path) {
  fs::path p(path);
  fs::path dir = p.parent_path();
  std::random_device rd;
  std::string name = fmt::format(".{}.slab-{}-{:08x}", p.filename().string(), ::getpid(), rd());
  return (dir / name).string();
}

Status LinkIntoPlace(const std::string& temp, const std::string& path) {
  // link(2), unlike rename(2), refuses to replace an existing file.
  if (::link(temp.c_str(), path.c_str()) != 0) return engine::StatusFromErrno(errno, path);
  ::unlink(temp.c_str());
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return engine::StatusFromErrno(errno, dir.string());
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return engine::StatusFromErrno(err, dir.string());
  return Status::OK();
}

void RemoveQuietly(const std::string& path) { ::unlink(path.c_str()); }

// ---------------------------------------------------------------- InputFile

InputFile::InputFile(int fd, bool owned, std::string name, std::optional<uint64_t> size)
    : fd_(fd), owned_(owned), name_(std::move(name)), size_(size) {}

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), owned_(other.owned_), name_(std::move(other.name_)), size_(other.size_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    owned_ = other.owned_;
    name_ = std::move(other.name_);
    size_ = other.size_;
  }
  return *this;
}

InputFile::~InputFile() { Reset(); }

void InputFile::Reset() {
  if (fd_ >= 0 && owned_) ::close(fd_);
  fd_ = -1;
}

Result<InputFile> InputFile::Open(const std::string& path) {
  int fd = STDIN_FILENO;
  bool owned = false;
  std::string name = path == kStdStreamName ? std::string("stdin") : path;
  if (path != kStdStreamName) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Err(engine::StatusFromErrno(errno, name));
    owned = true;
  }
  InputFile in(fd, owned, name, std::nullopt);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Err(engine::StatusFromErrno(errno, name));
  if (S_ISDIR(st.st_mode)) return Err(engine::StatusFromErrno(EISDIR, name));
  if (S_ISREG(st.st_mode)) {
    // stdin redirected from a file may not start at offset 0.
    off_t pos = ::lseek(fd, 0, SEEK_CUR);
    if (pos >= 0 && pos <= st.st_size) in.size_ = static_cast<uint64_t>(st.st_size - pos);
  }
  return in;
}

Result<size_t> InputFile::ReadFull(void* buf, size_t n) { return engine::ReadFully(fd_, buf, n, name_); }

// ---------------------------------------------------------------- OutputFile

OutputFile::OutputFile(int fd, bool owned, std::string name, std::string temp_path)
    : fd_(fd), owned_(owned), name_(std::move(name)), temp_path_(std::move(temp_path)) {}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      owned_(other.owned_),
      name_(std::move(other.name_)),
      temp_path_(std::exchange(other.temp_path_, std::string())) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    owned_ = other.owned_;
    name_ = std::move(other.name_);
    temp_path_ = std::exchange(other.temp_path_, std::string());
  }
  return *this;
}

OutputFile::~OutputFile() { Reset(); }

void OutputFile::Reset() {
  if (fd_ >= 0 && owned_) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

Result<OutputFile> OutputFile::Create(const std::string& path) {
  if (path == kStdStreamName) return OutputFile(STDOUT_FILENO, false, "stdout", "");
  if (path.empty()) return Err(Status::InvalidArgument("the output path is empty"));

  fs::path p(path);
  boost::system::error_code ec;
  fs::file_status target = fs::status(p, ec);
  if (fs::is_directory(target)) return Err(engine::StatusFromErrno(EISDIR, path));
  fs::file_status link = fs::symlink_status(p, ec);
  mode_t mode = 0;
  if (fs::exists(link) && !fs::is_regular_file(link)) {
    // /dev/null, a FIFO, a symlink: write through it, as a shell redirection would.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return Err(engine::StatusFromErrno(errno, path));
    return OutputFile(fd, true, path, "");
  }
  if (fs::exists(link)) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }

  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = (dir / ("." + p.filename().string() + ".slab-XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) return Err(engine::StatusFromErrno(errno, path));
  OutputFile out(fd, true, path, std::string(buf.data()));
  if (::fchmod(fd, mode) != 0) return Err(engine::StatusFromErrno(errno, path));
  return out;
}

Status OutputFile::Write(const void* buf, size_t n) { return engine::WriteFully(fd_, buf, n, name_); }

Status OutputFile::Finish() {
  if (!owned_) return Status::OK();
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return engine::StatusFromErrno(errno, name_);
  if (!temp_path_.empty()) {
    if (::rename(temp_path_.c_str(), name_.c_str()) != 0) return engine::StatusFromErrno(errno, name_);
    temp_path_.clear();
  }
  return Status::OK();
}

}  // namespace slabfs::tools
