// The kernel's mount table as /proc/PID/mountinfo gives it: one parser for
// every user (the mount-point check, the readahead window).
//
//   36 35 0:39 / /mnt/x rw,nosuid shared:1 - fuse.slabfs /data/x.slab rw,...
//   id parent MAJOR:MINOR root mount-point options [optional...] - fstype source super-options
//
// Pure functions except ReadMountInfo; thread-safe.
#ifndef SLABFS_FUSEFS_MOUNTINFO_H_
#define SLABFS_FUSEFS_MOUNTINFO_H_

#include <string>
#include <string_view>
#include <vector>

namespace slabfs::fusefs {

// One line of mountinfo, unescaped (\040 -> ' ').
struct MountEntry {
  std::string mount_point;
  std::string fstype;  // "ext4", "fuse.slabfs", "autofs", ...
  std::string source;  // the device or, for slabfs, the container (fsname)
  std::string device;  // "MAJOR:MINOR" of the mount's device
};

// The entries of a mountinfo text, in its order (later entries at the same
// path are mounted on top of earlier ones). Malformed lines are skipped.
std::vector<MountEntry> ParseMountInfo(std::string_view text);

// The top entry mounted at `path` (absolute, resolved), or null.
const MountEntry* TopMountAt(const std::vector<MountEntry>& mounts, std::string_view path);

// This process's mount table (/proc/self/mountinfo); empty if it cannot be
// read.
std::vector<MountEntry> ReadMountInfo();

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_MOUNTINFO_H_
