// Bytes written once, in order, then read at any offset: the encoded form
// of a generated view (png_view.h), whose size is known only at its end.
// The first kMemoryBytes stay in memory; past that, everything moves to an
// unnamed temporary file in $TMPDIR (default /tmp), which disappears when
// the buffer is destroyed, so a large picture costs disk, not memory.
//
// Append and Finish from one thread; after Finish, ReadAt and size() from
// any number of threads.
#ifndef SLABFS_FUSEFS_VIEWS_SPILL_BUFFER_H_
#define SLABFS_FUSEFS_VIEWS_SPILL_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "slabfs/status.h"

namespace slabfs::fusefs::views {

class SpillBuffer {
 public:
  static constexpr size_t kMemoryBytes = size_t{1} << 20;

  SpillBuffer() = default;
  ~SpillBuffer();
  SpillBuffer(const SpillBuffer&) = delete;
  SpillBuffer& operator=(const SpillBuffer&) = delete;

  // NoSpace when the temporary file's disk is full, IOError for another
  // failure to make or write it.
  Status Append(const void* data, size_t n);
  // Writes out what is still buffered; the buffer is read-only after it.
  Status Finish();

  uint64_t size() const { return size_; }
  bool spilled() const { return fd_ >= 0; }
  // Bytes [off, off + n), clipped at the end; the count copied.
  Result<size_t> ReadAt(uint64_t off, size_t n, char* out) const;

 private:
  Status Spill();  // moves memory_ to a new temporary file
  Status Flush();  // writes memory_ to the file

  std::string memory_;  // everything (not spilled) or the unwritten tail
  uint64_t size_ = 0;
  uint64_t file_bytes_ = 0;
  int fd_ = -1;
};

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_SPILL_BUFFER_H_
