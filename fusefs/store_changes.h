// The file view's changes on a mount of a foreign store that can be
// changed in place (a Zarr store mounted read-write: Filesystem::writer,
// include/slabfs/store_writer.h), and the two it shares with a slab mount
// (attributes, groups), so that each handler keeps one path for both:
//
//   write, `>>`    WritableStoreDataset::WriteBytesUpTo (grows whole rows)
//   truncate       SetSizeBytes: whole rows of the first dimension, else
//                  EINVAL; O_TRUNC empties a dataset whose first dimension
//                  can change
//   setfattr, setfattr -x   user.* attributes (SetObjectAttribute,
//                  RemoveObjectAttribute)
//   mkdir          a new group (CreateGroup)
//   fsync, close after a write   StoreWriter::Sync (Commit in filesystem.h)
//
// Everything else that changes the tree (create, unlink, rmdir, rename,
// links, fallocate, user.slab.* layout fields, writes through slice views)
// is refused on such a mount: by Changing<> in filesystem.cc (ENOTSUP,
// logged) or by the handler (the layout fields, the views).
#ifndef SLABFS_FUSEFS_STORE_CHANGES_H_
#define SLABFS_FUSEFS_STORE_CHANGES_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fusefs/filesystem.h"
#include "slabfs/attribute.h"
#include "slabfs/status.h"

namespace slabfs::fusefs {

// Sets or removes attribute `name` of object `id`: the container's on a
// slab mount, else the store writer's (ReadOnly without one).
Status SetObjectAttribute(Filesystem& fs, ObjectId id, std::string_view name, const Attribute& value);
Status RemoveObjectAttribute(Filesystem& fs, ObjectId id, std::string_view name);
// A new group `name` in `parent`, on either kind of mount.
Result<ObjectId> CreateObjectGroup(Filesystem& fs, ObjectId parent, std::string_view name);

// The write handler's work for a writable store's dataset: replies to req
// (the count written) or returns the errno it refused with, logged.
int WriteToStore(fuse_req_t req, Filesystem& fs, fuse_ino_t ino, FileHandle* fh, const char* buf, size_t size,
                 off_t off);
// truncate(2) of a writable store's dataset to `size` bytes. The caller
// logs a failure.
Status TruncateInStore(Filesystem& fs, const FileData& data, uint64_t size);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_STORE_CHANGES_H_
