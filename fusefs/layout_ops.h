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

// setxattr user.slab.<field> = value on dataset `ino`. The value it has is
// accepted as is (cp -a and rsync -X copy these names). A figure (stored,
// defined) is read-only, except that a new file ignores it. A layout field
// changes the layout of an empty dataset at once (EINVAL if invalid); on a
// new file holding data it is staged until the fields given so far make a
// layout its bytes fit, applied then, or at its last close. Any other
// dataset's layout is fixed: EPERM.
int SetLayoutXattr(Filesystem& fs, fuse_ino_t ino, std::string_view field, std::string_view value);

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
