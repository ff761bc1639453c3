// The FUSE handlers of a dataset's file: open, read, write, and flush,
// release and fsync, which make its writes durable.
//
// An open file carries a FileHandle (filesystem.h) holding its Dataset, so
// reads and writes skip the lookup by id; the inode table counts the
// handles (inode_table.h). Reads are answered by splicing from the
// container file where they can (splice_reply.h). A write past the end
// grows a dataset whose first dimension can grow, by whole rows, and one
// that ends inside the last row leaves a partial row until the row is
// complete or the handle is closed. Every close (flush) after a write
// through the handle commits, so a writer's close(2) returns once its data
// is durable and a failed commit reaches it as an error (-o bulk leaves
// that to the commit timer, fsync and the unmount); writes the engine had
// to drop are EIO at the next flush or fsync of a descriptor open for
// writing. A new file's last close gives it its layout (layout_ops.h).
#ifndef SLABFS_FUSEFS_FILE_OPS_H_
#define SLABFS_FUSEFS_FILE_OPS_H_

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

namespace slabfs::fusefs {

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi);
void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void FSync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_FILE_OPS_H_
