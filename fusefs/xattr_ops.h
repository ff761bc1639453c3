// The extended-attribute handlers (see xattr.h for the view they serve).
// Wired up with the others in Operations().
#ifndef SLABFS_FUSEFS_XATTR_OPS_H_
#define SLABFS_FUSEFS_XATTR_OPS_H_

#include "fusefs/filesystem.h"

namespace slabfs::fusefs {

void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags);
void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_XATTR_OPS_H_
