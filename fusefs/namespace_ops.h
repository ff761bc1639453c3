// The FUSE handlers that change names: new files (create, mknod), groups
// (mkdir, rmdir), removal (unlink), rename, and the refusals of links.
// Every change is committed before the reply (CommitChange), so that an
// unmount finds nothing left to commit. Where a tool replaces a dataset's
// file, the layout is kept (layout_keeper.h).
#ifndef SLABFS_FUSEFS_NAMESPACE_OPS_H_
#define SLABFS_FUSEFS_NAMESPACE_OPS_H_

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

namespace slabfs::fusefs {

void MkNod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi);
void MkDir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name);
void RmDir(fuse_req_t req, fuse_ino_t parent, const char* name);
void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
            unsigned int flags);
// Symbolic and hard links do not exist in a container: EPERM, as for
// mknod of anything but a regular file.
void Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name);
void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_NAMESPACE_OPS_H_
