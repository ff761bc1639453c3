// How a container is opened: OpenOptions.
#ifndef SLABFS_OPEN_OPTIONS_H_
#define SLABFS_OPEN_OPTIONS_H_

#include <cstdint>
#include <string>

namespace slabfs {

struct OpenOptions {
  bool read_only = false;
  bool create = false;  // create the file (fails if it exists)
  // The chunk cache's budget: a hard bound on the memory its chunks take,
  // unless cache_max_bytes allows more.
  uint64_t cache_bytes = 64ull << 20;
  // How far the cache may grow past cache_bytes when the working set does
  // not fit (a chunk evicted and wanted again grows the budget by one
  // chunk's worth). 0, or anything not above cache_bytes: it never grows.
  uint64_t cache_max_bytes = 0;
  // Place new extents back to back instead of aligning chunks to 4 KiB
  // (and blocks to 64 bytes): no gaps, so a container written once has no
  // free space inside (slab repack's output). Direct partial reads of
  // unaligned chunks touch one more page now and then.
  bool pack = false;
  // A program name recorded in the container's lock record while it is open
  // for writing, so that a refused second writer can name the holder.
  std::string holder = "slab";
  // The mount point a daemon holding the container serves (recorded with
  // the holder): an open that finds the container held by a slabfs daemon
  // whose mount point is gone waits for its last commit (at most a
  // minute) instead of failing or reading the commit before it.
  std::string holder_mount;
  // Readers that follow a writer. A writer reuses the space a commit no
  // longer references only once no read-only open (in any process that
  // shares the kernel's locks) still reads an older commit. Where locks may
  // not reach readers on other hosts, it also waits this many seconds after
  // the commit: a reader there must Refresh within that time. -1 (auto):
  // 60 on network and FUSE filesystems, 0 on local ones.
  int reuse_delay_seconds = -1;
  // A writer derives the free list from what the committed tree references
  // instead of reading it, and the next commit writes it (slab fsck
  // --repair): leaked space is free again. A free list that cannot be read
  // (a damaged block) is rebuilt this way by every writer, with a warning,
  // and ignored by a reader, which allocates nothing.
  bool rebuild_free_list = false;
};

}  // namespace slabfs

#endif  // SLABFS_OPEN_OPTIONS_H_
