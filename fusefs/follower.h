// -o ro,follow[=SECONDS]: a read-only mount that shows new commits as a
// writer (another mount, `slab`, the API) makes them.
//
// Every interval the container moves to the newest commit
// (Container::Refresh, which keeps reading the old one until the new one
// has loaded whole). When it changed, the kernel is told to forget what it
// cached of what changed: the names of the old commit that no longer lead
// to the same object (fuse_lowlevel_notify_inval_entry), the pages and
// attributes of every changed dataset and the attributes of every changed
// group (through the Invalidator's thread, see invalidator.h); changed
// objects get the refresh's time as their mtime, so `ls -l`, `make` and
// `tail -f` notice. New names need nothing: the daemon answers no lookup
// with a cached negative entry.
//
// The Notify functions are given rather than a session so that the steps
// can be tested on their own. Step runs on the follow thread (a Committer);
// it is not thread-safe against itself.
#ifndef SLABFS_FUSEFS_FOLLOWER_H_
#define SLABFS_FUSEFS_FOLLOWER_H_

#include <functional>
#include <string_view>

#include "slabfs/container.h"
#include "slabfs/status.h"

namespace slabfs::fusefs {

struct FollowHooks {
  // The kernel forgets the dentry `name` in directory `parent`.
  std::function<void(uint64_t parent, std::string_view name)> forget_name;
  // The kernel forgets the pages and attributes of a dataset's file.
  std::function<void(uint64_t ino)> forget_data;
  // The kernel forgets the attributes of a directory (or a removed file).
  std::function<void(uint64_t ino)> forget_attributes;
  // The object changed now (its mtime).
  std::function<void(uint64_t ino)> touch;
};

// One refresh: moves `c` to its newest commit and tells the hooks what
// changed. Returns Refresh's error, if any (the mount keeps the commit it
// had).
Status FollowStep(Container& c, const FollowHooks& hooks);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_FOLLOWER_H_
