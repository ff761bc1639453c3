// Whether slabfs may mount at a directory. libfuse 3 mounts anywhere: over
// files a user then cannot see, and over a live mount (a second `mount -a`,
// a script run twice), which hides the first mount and leaves its daemon
// serving nobody. The daemon refuses both before it opens the container:
//
//   - a mount point that already is one (the top entry for that path in
//     /proc/self/mountinfo), unless that entry is an autofs trigger, which
//     is how systemd's automount (x-systemd.automount) starts the daemon;
//   - a directory that holds any entry, unless -o nonempty.
//
// Thread-safe; CheckMountPoint reads /proc/self/mountinfo and the directory.
#ifndef SLABFS_FUSEFS_MOUNT_POINT_H_
#define SLABFS_FUSEFS_MOUNT_POINT_H_

#include <string>
#include <string_view>
#include <vector>

#include "fusefs/mountinfo.h"
#include "slabfs/status.h"

namespace slabfs::fusefs {

// OK if slabfs may mount at `mountpoint` (absolute, symlinks resolved, as
// libfuse gives it) given the mount table `mounts`:
//   Busy      it is a mount point already (autofs excepted), naming what is
//             mounted there and how to unmount it;
//   NotEmpty  it is a directory holding entries and !allow_nonempty.
// A directory that cannot be listed is let through (the mount itself then
// decides).
Status CheckMountPoint(const std::string& mountpoint, bool allow_nonempty, const std::vector<MountEntry>& mounts);

// The same with this process's mount table (/proc/self/mountinfo; if it
// cannot be read, only the directory is checked).
Status CheckMountPoint(const std::string& mountpoint, bool allow_nonempty);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_MOUNT_POINT_H_
