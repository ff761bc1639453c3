// The kernel's readahead window for a mount.
//
// A FUSE mount gets its own backing device whose readahead defaults to
// 128 KiB, so buffered reads (cat, dd, numpy.fromfile, mmap) reach the
// daemon as 128 KiB requests whatever max_pages allows, and each request
// costs the engine a lookup of every chunk it touches. Raising the window to
// one maximal request (1 MiB) cuts that cost eightfold for sequential reads.
// The window lives in /sys/class/bdi/MAJOR:MINOR/read_ahead_kb (root only).
#ifndef SLABFS_FUSEFS_READAHEAD_H_
#define SLABFS_FUSEFS_READAHEAD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace slabfs::fusefs {

// The "MAJOR:MINOR" of the FUSE mount at `mountpoint`, from the text of
// /proc/self/mountinfo (the last matching line wins, as for stacked mounts).
std::optional<std::string> FuseMountDevice(std::string_view mountinfo, std::string_view mountpoint);

// Sets the readahead window of the FUSE mount at `mountpoint`. Returns an
// empty string on success, else why not (not root, no such mount).
std::string SetMountReadahead(std::string_view mountpoint, uint64_t bytes);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_READAHEAD_H_
