// Where the mount changes a dataset's layout: user.slab.* extended
// attributes set on a new or empty file, a new file renamed over a dataset,
// and the last close of a new file created where a dataset was. See
// layout_keeper.h for the why, layout_edit.h for the fields.
//
// Each returns 0 or an errno it has logged (Refuse), and replies nothing.
#ifndef SLABFS_FUSEFS_LAYOUT_OPS_H_
#define SLABFS_FUSEFS_LAYOUT_OPS_H_

#include <string_view>

#include "fusefs/filesystem.h"

namespace slabfs::fusefs {

// setxattr user.slab.<field> = value on dataset `ino`. A figure (stored,
// defined) is accepted and ignored (cp -a, rsync -X and tar --xattrs copy
// it). On a new file a layout field is staged with those given before, in
// any order, and the staged fields are applied whenever they describe a
// layout its bytes fit (a growable one takes the length its bytes give):
// at once while it holds no data, else when it is not open, else at its
// last close; a malformed value is EINVAL, a combination that does not
// hold together yet waits for more fields. On any other dataset the value
// it has is accepted as is, a layout field changes the layout of one that
// stores nothing at once (EINVAL if invalid), and the layout of one
// holding data is fixed: EPERM.
int SetLayoutXattr(Filesystem& fs, fuse_ino_t ino, std::string_view field, std::string_view value);

// The same on a foreign store's mount (HDF5, Zarr), whose layout is the
// store's own metadata: on a writable store a figure is accepted and
// ignored and a field set to the value it shows changes nothing (so cp -a,
// rsync -X and tar --xattrs over an array succeed, as on a container);
// any other value, and anything on a read-only store, is EPERM.
int SetStoreLayoutXattr(Filesystem& fs, fuse_ino_t ino, std::string_view field, std::string_view value);

// Before rename(2) of dataset `src` over dataset `dst`: a new file takes
// dst's layout and attributes when its bytes fit (else it keeps its own and
// a line says what was replaced).
int KeepLayoutOnReplace(Filesystem& fs, ObjectId src, ObjectId dst, std::string_view what);

// At a close (flush or release) of new file `ino` through its last open
// handle: staged user.slab.* fields are applied when its bytes fit them,
// or else the layout of the dataset that was at its name before it was
// created, if its bytes fit that.
int FinishNewFile(Filesystem& fs, fuse_ino_t ino, const Dataset& ds);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_LAYOUT_OPS_H_
