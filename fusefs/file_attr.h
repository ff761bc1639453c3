// How a group or dataset looks to stat(2): the mapping from the engine's
// ObjectInfo to struct stat. Pure functions: thread-safe.
#ifndef SLABFS_FUSEFS_FILE_ATTR_H_
#define SLABFS_FUSEFS_FILE_ATTR_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>

#include "slabfs/types.h"

namespace slabfs::fusefs {

// st_blksize: large, so that cp and friends move whole MiBs per request.
inline constexpr blksize_t kPreferredIoBytes = 1 << 20;

// What every object on one mount shares.
struct StatContext {
  uid_t uid = 0;  // the mounting user owns everything
  gid_t gid = 0;
  bool read_only = false;
};

// Groups: directories, 0755, nlink 1 (so that find does not count on
// link counts for subdirectories). Datasets: regular files, 0644 (0444 on
// a read-only mount), st_size = size_bytes, st_blocks = stored bytes in
// 512-byte units, rounded up. st_ino is the object id.
struct stat MakeStat(const ObjectInfo& info, const StatContext& ctx, const timespec& mtime);

// The permission bits MakeStat reports for an object of `kind`.
mode_t ModeFor(ObjectKind kind, bool read_only);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_FILE_ATTR_H_
