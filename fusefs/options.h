// The daemon's command line:
//
//   slabfs CONTAINER MOUNTPOINT [-f] [-s] [-d] [-o OPT[,OPT...]]
//
// slabfs's own -o options are ro, rw, cache_size=SIZE, cache_max=SIZE,
// commit_interval=SECONDS, follow[=SECONDS], reuse_delay=SECONDS, nosplice,
// log_level=LEVEL, log_file=PATH, nonempty and bulk (one table in options.cc
// parses them and writes --help); the words of /etc/fstab and systemd that
// are not for the filesystem (noauto, user, nofail, _netdev, x-*, ...) are
// dropped; every other option (-h, -V, -o allow_other, -o max_threads=N,
// ...) is left for libfuse, which CheckFuseOptions asks before the daemon
// starts.
//
// Pure functions of their arguments: thread-safe, no side effects except
// that libfuse's messages during parsing are captured into the error.
#ifndef SLABFS_FUSEFS_OPTIONS_H_
#define SLABFS_FUSEFS_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"
#include "stores/store_format.h"

namespace slabfs::fusefs {

inline constexpr uint64_t kDefaultCacheBytes = 64ull << 20;
inline constexpr std::chrono::milliseconds kDefaultCommitInterval{5000};
inline constexpr std::chrono::milliseconds kDefaultFollowInterval{1000};

struct MountConfig {
  std::string container;   // absolute path of the container file
  std::string mountpoint;  // absolute, symlinks resolved (by libfuse)

  // What the path holds: -o format=slab|hdf5|netcdf|zarr, else found by
  // its signature (stores/store_format.h); a path that is none of them is
  // opened as a container, which says why it is not one. HDF5 and netCDF
  // mount read-only (read_only is set and the kernel mounts ro); Zarr
  // read-write unless -o ro.
  stores::StoreFormat format = stores::StoreFormat::kSlab;
  bool format_given = false;

  bool read_only = false;                     // -o ro
  uint64_t cache_bytes = kDefaultCacheBytes;  // -o cache_size=SIZE
  uint64_t cache_max_bytes = 0;               // -o cache_max=SIZE (0: no growth)
  // -o commit_interval=SECONDS; zero disables the periodic commit.
  std::chrono::milliseconds commit_interval = kDefaultCommitInterval;
  std::string log_level = "info";  // -o log_level=LEVEL
  // -o log_file=PATH, made absolute: the log goes there as well as to
  // stderr, and there alone (not to syslog) once the daemon detaches.
  std::string log_file;
  // -o nonempty: mount over a directory that holds files (hiding them
  // while mounted). Never over an existing mount (see mount_point.h).
  bool allow_nonempty = false;
  // -o bulk: no commit per close or namespace change (FsOptions::bulk).
  bool bulk = false;
  // -o follow[=SECONDS] (needs ro): move to the newest commit this often;
  // zero: never.
  std::chrono::milliseconds follow_interval{0};
  // -o reuse_delay=SECONDS (OpenOptions::reuse_delay_seconds); -1: auto.
  int reuse_delay_seconds = -1;
  // Reads may be answered by splicing the container file's bytes (not -o
  // nosplice; see splice_reply.h).
  bool splice_reads = true;

  bool foreground = false;        // -f (and -d)
  bool single_thread = false;     // -s
  bool debug = false;             // -d: libfuse traces every request
  bool clone_fd = false;          // -o clone_fd
  unsigned max_idle_threads = 0;  // UINT_MAX: not given
  unsigned max_threads = 0;       // as libfuse parsed it (default 10)
  bool show_help = false;         // -h / --help: nothing else is required
  bool show_version = false;      // -V / --version

  // The argument vector for fuse_session_new: argv[0] followed by the
  // options slabfs passes to libfuse and the kernel (fsname, subtype,
  // default_permissions, ro, and whatever the user gave that slabfs does not
  // consume).
  std::vector<std::string> fuse_args;
};

// Parses argv (argv[0] is the program name). InvalidArgument with a message
// fit for the user on a bad or missing argument.
Result<MountConfig> ParseCommandLine(const std::vector<std::string>& argv);

// "65536", "64K", "64M", "1G", "1.5G", "2T", "64MiB", "64mb": bytes, with
// binary multiples. Zero, negative, malformed or overflowing sizes are
// InvalidArgument.
Result<uint64_t> ParseSize(std::string_view text);

// "5", "0.5", "10s": a non-negative number of seconds (0 = off), at most a
// day. Malformed text is InvalidArgument.
Result<std::chrono::milliseconds> ParseInterval(std::string_view text);

// Whether `level` is one of trace, debug, info, warn, error, off.
bool IsLogLevel(std::string_view level);

// Whether libfuse accepts the options slabfs passes on to it (it rejects
// unknown ones only when a session is made, which for a daemon is after it
// has left the terminal): InvalidArgument with libfuse's message.
Status CheckFuseOptions(const MountConfig& cfg);

// The usage text for `slabfs -h`, without libfuse's own option list.
std::string Usage(std::string_view program);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_OPTIONS_H_
