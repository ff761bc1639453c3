// Byte streams for `slab import` and `slab export`: an input file or stdin,
// an output file or stdout. Failed system calls become Statuses through
// engine/io/os_error.h, as everywhere.
//
// An OutputFile for a path writes to a temporary file next to it and renames
// it into place at Finish(), so a failed export never leaves a half-written
// file under the requested name. (When the path names something that is not
// a plain regular file, such as /dev/null, a FIFO or a symlink, it is written
// in place.) Neither class is thread-safe.
#ifndef SLABFS_TOOLS_BYTE_STREAM_H_
#define SLABFS_TOOLS_BYTE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "slabfs/status.h"

namespace slabfs::tools {

// The name that means stdin or stdout.
inline constexpr std::string_view kStdStreamName = "-";

// Whether both paths exist and name the same file (after symlinks), so that
// the container itself is never used as an import input or export output.
bool IsSameFile(const std::string& a, const std::string& b);

// A path next to `path` (".NAME.slab-PID-RANDOM" in the same directory) for
// a file that takes the name `path` only once it is complete. Nothing is
// created.
std::string TempPathNextTo(const std::string& path);

// Gives the file at `temp` the name `path`, never replacing a file there
// (AlreadyExists then, and `temp` stays), drops the name `temp` and syncs
// the directory so that the new name is durable.
Status LinkIntoPlace(const std::string& temp, const std::string& path);

// Removes the file at `path` if there is one, for cleaning up after a
// failure; errors are ignored.
void RemoveQuietly(const std::string& path);

class InputFile {
 public:
  // Opens `path` for reading, or stdin for "-". NotFound, PermissionDenied,
  // InvalidArgument for a directory, IOError.
  static Result<InputFile> Open(const std::string& path);

  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  // Reads until `n` bytes have arrived or the input ends; returns the count.
  Result<size_t> ReadFull(void* buf, size_t n);
  // The file's size when it is a regular file, else nullopt (pipes, stdin
  // from a terminal).
  std::optional<uint64_t> size() const { return size_; }
  // The path as given ("-" for stdin), for messages.
  const std::string& name() const { return name_; }

 private:
  InputFile(int fd, bool owned, std::string name, std::optional<uint64_t> size);
  void Reset();

  int fd_ = -1;
  bool owned_ = false;
  std::string name_;
  std::optional<uint64_t> size_;
};

class OutputFile {
 public:
  // Creates (or replaces) `path`, or writes to stdout for "-".
  static Result<OutputFile> Create(const std::string& path);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Without a successful Finish(), removes the temporary file.
  ~OutputFile();

  Status Write(const void* buf, size_t n);
  // Closes the file and renames it into place. Reports any write error the
  // kernel kept back until close.
  Status Finish();
  const std::string& name() const { return name_; }

 private:
  OutputFile(int fd, bool owned, std::string name, std::string temp_path);
  void Reset();

  int fd_ = -1;
  bool owned_ = false;
  std::string name_;       // the path as given
  std::string temp_path_;  // empty when writing in place
};

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_BYTE_STREAM_H_
