// The daemon's life: open the container, mount, serve, unmount, commit.
#ifndef SLABFS_FUSEFS_DAEMON_H_
#define SLABFS_FUSEFS_DAEMON_H_

#include <string_view>

#include "fusefs/options.h"
#include "slabfs/status.h"

namespace slabfs::fusefs {

inline constexpr std::string_view kVersion = "0.1.0";

// Runs the daemon for a parsed command line and returns when the file
// system is unmounted (fusermount3 -u, umount, or SIGINT/SIGTERM/SIGHUP).
//
// First the mount point is checked (mount_point.h): a directory that is a
// mount point already, or holds files without cfg.allow_nonempty, is
// refused. Without cfg.foreground the process then forks. The child opens the
// container and mounts while its stderr is still the terminal; only once the
// mount is live does it detach (logging to cfg.log_file if given, else to
// syslog) and let the parent exit
// 0. If the child fails before that, it returns the failure here (for the
// caller to print and exit non-zero) and the parent exits with the child's
// status. Opening in the child rather than before the fork keeps the engine's
// threads and file locks in the process that uses them.
//
// Returns OK after a clean unmount whose final commit succeeded; otherwise
// the first failure: the log file cannot be opened (IOError), the mount
// point is refused (Busy, NotEmpty), the container cannot be opened
// (NotFound, NotSupported for a file that is not a container, Corruption,
// Busy naming the holder, ...), the mount fails, or the final commit fails.
Status RunDaemon(const MountConfig& cfg);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_DAEMON_H_
