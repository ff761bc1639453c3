// The FUSE handlers of a group's directory: lookup of a name in it, its
// listing (opendir, readdir, readdirplus, releasedir) and fsyncdir.
//
// An open directory carries a DirHandle (filesystem.h): a snapshot of the
// listing taken at opendir, so that readdir offsets stay stable; a readdir
// from offset 0 after the first lists again (rewinddir shows changes).
// Offsets: 0 is ".", 1 is "..", 2 + i the i-th entry by name. A lookup of
// a name that is not a child may name a view of one (views/view_ops.h).
#ifndef SLABFS_FUSEFS_DIR_OPS_H_
#define SLABFS_FUSEFS_DIR_OPS_H_

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

namespace slabfs::fusefs {

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void ReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void FSyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_DIR_OPS_H_
