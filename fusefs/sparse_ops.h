// The handlers of Unix sparse-file semantics: lseek's SEEK_DATA and
// SEEK_HOLE (see seek.h) and fallocate. Wired up with the others in
// Operations().
//
// fallocate modes:
//   PUNCH_HOLE|KEEP_SIZE  Dataset::Erase of the elements wholly inside the
//                         range (a sparse dataset forgets them; a dense one
//                         frees the chunks wholly inside and stores the fill
//                         value in the rest); elements cut by an end of the
//                         range keep their values.
//   ZERO_RANGE[|KEEP_SIZE] writes the fill value into the elements wholly
//                         inside the range (it defines them); elements cut
//                         by an end keep their values.
//   0, KEEP_SIZE          nothing to do inside the size: elements never
//                         written take no space and read as the fill value,
//                         and every write finds its chunk space at write time.
// A range that reaches past the end without KEEP_SIZE (growing the file) is
// EOPNOTSUPP: glibc's posix_fallocate then writes the new bytes itself, which
// grows a dataset whose first dimension can grow, as any write does. Other
// modes are EOPNOTSUPP, a read-only mount EROFS. Punch and zero drop the
// range from the kernel's page cache before answering (see invalidator.h).
#ifndef SLABFS_FUSEFS_SPARSE_OPS_H_
#define SLABFS_FUSEFS_SPARSE_OPS_H_

#include "fusefs/filesystem.h"

namespace slabfs::fusefs {

void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi);
void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info* fi);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_SPARSE_OPS_H_
