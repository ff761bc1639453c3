// Room for the changes the chunk cache holds.
//
// A write that covers part of a chunk (or lands on a chunk already cached)
// changes the chunk in the cache, and the bytes reach the file only at
// write-back: when the cache is over budget, or at the next commit. On a
// disk with less free space than the cache's budget, writes would be
// accepted into memory and the commit would fail later, after the writer
// was told they succeeded. Like a filesystem with delayed allocation, which
// reserves blocks when it accepts a write, the engine refuses such a write
// at once (NoSpace, ENOSPC through the mount) when the changes the cache
// would then hold could not all be stored: in the container's free space
// plus the free space of the disk it is on, with a margin for rounding and
// the commit's own blocks. Whole chunks written straight to the file are
// counted too (the check is made before the write knows which chunks go
// which way), so a write is refused up to one write's worth of chunks
// before the disk is truly full. Where the disk's free space cannot be
// read (a file that is no path, a filesystem whose statvfs reports no
// size), nothing is refused.
#ifndef SLABFS_ENGINE_SPACE_DIRTY_ROOM_H_
#define SLABFS_ENGINE_SPACE_DIRTY_ROOM_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/io/file.h"
#include "engine/util/mutex.h"
#include "slabfs/status.h"

namespace slabfs::engine {

class DirtyRoom {
 public:
  // `space_of` reads a disk's space (DiskSpaceOf; tests give their own).
  using SpaceOf = std::function<Result<DiskSpace>(const std::string&)>;
  explicit DirtyRoom(std::string path, SpaceOf space_of = DiskSpaceOf)
      : path_(std::move(path)), space_of_(std::move(space_of)) {}

  // OK if `dirty_after` bytes of changes (what the cache would hold after
  // the write, counting the write's chunks whole) can be stored beside the
  // `container_free` bytes the container can reuse; else NoSpace. Reads
  // the disk's free space (statvfs) at most every 100 ms while there is
  // plenty, and at every call close to the edge. Thread-safe.
  Status Check(uint64_t dirty_after, uint64_t container_free);
  // The common case without a lock or a syscall: true when the disk alone,
  // as last read less than 100 ms ago, holds twice what `dirty_after`
  // needs. Otherwise the caller asks Check (which may still say OK).
  bool Roomy(uint64_t dirty_after) const;

 private:
  const std::string path_;
  const SpaceOf space_of_;
  Mutex mu_{LockRank::kDiskRoom};  // Check reads the disk's space under it
  bool known_ GUARDED_BY(mu_) = false;
  uint64_t disk_free_ GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point read_at_ GUARDED_BY(mu_);
  // Copies of disk_free_ (0: unknown) and read_at_ for Roomy.
  std::atomic<uint64_t> fast_free_{0};
  std::atomic<int64_t> fast_read_at_ns_{0};
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_SPACE_DIRTY_ROOM_H_
