// The attributes of groups and datasets as the kernel sees them: the entry
// of a lookup or a creation, getattr, and setattr.
//
// Attributes come through the file handle when the kernel passes one, else
// by id, else, for a dataset removed while open, through an open handle
// (st_nlink 0). A dataset's st_size is the size the inode table reports
// (a partial row's end while there is one, inode_table.h); mtimes are the
// inode table's. setattr: a size is a truncate (a whole number of rows for
// a dataset whose first dimension can change, EINVAL otherwise; 0 resets a
// fixed dataset to the fill value); an mtime is kept; modes and owners are
// not stored, so a chmod or chown is accepted and ignored, as on vfat.
#ifndef SLABFS_FUSEFS_ATTR_OPS_H_
#define SLABFS_FUSEFS_ATTR_OPS_H_

#include "fusefs/filesystem.h"

namespace slabfs::fusefs {

// The reply to a lookup or a creation: the object's attributes, with this
// mount's timeouts.
fuse_entry_param EntryFor(Filesystem& fs, const ObjectInfo& info);

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_ATTR_OPS_H_
