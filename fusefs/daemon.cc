#include "fusefs/daemon.h"

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "fusefs/filesystem.h"
#include "fusefs/log.h"
#include "fusefs/mount_point.h"
#include "slabfs/container.h"
#include "slabfs/store.h"
#include "stores/open_store.h"

namespace slabfs::fusefs {
namespace {

// Forks. The parent waits until the child reports a live mount (one byte on
// the pipe) and exits 0, or until the child exits and exits with its
// status; it never returns. The child returns the pipe's write end.
Result<int> ForkAndWait() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Err(Status::IOError(fmt::format("pipe: {}", std::strerror(errno))));
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return Err(Status::IOError(fmt::format("fork: {}", std::strerror(errno))));
  if (pid == 0) {
    close(fds[0]);
    setsid();
    return fds[1];
  }
  close(fds[1]);
  char byte = 1;
  ssize_t n;
  do {
    n = read(fds[0], &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1 && byte == 0) _exit(0);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  _exit(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0 ? WEXITSTATUS(wstatus) : 1);
}

// The mount is live: log to the log file or syslog, let go of the
// terminal, free the parent.
void FinishDetach(int ready_fd) {
  LogAfterDetach();
  if (chdir("/") != 0) Log().warn("chdir /: {}", std::strerror(errno));
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO) close(null);
  }
  const char ok = 0;
  if (write(ready_fd, &ok, 1) != 1) {
    Log().warn("cannot signal the parent: {}", std::strerror(errno));
  }
  close(ready_fd);
}

struct FuseArgs {
  explicit FuseArgs(const std::vector<std::string>& argv) {
    for (const std::string& a : argv) {
      if (fuse_opt_add_arg(&args, a.c_str()) != 0) throw std::bad_alloc();
    }
  }
  ~FuseArgs() { fuse_opt_free_args(&args); }
  FuseArgs(const FuseArgs&) = delete;
  FuseArgs& operator=(const FuseArgs&) = delete;
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
};

int Loop(fuse_session* se, const MountConfig& cfg) {
  if (cfg.single_thread) return fuse_session_loop(se);
  std::unique_ptr<fuse_loop_config, decltype(&fuse_loop_cfg_destroy)> loop(fuse_loop_cfg_create(),
                                                                           &fuse_loop_cfg_destroy);
  if (loop == nullptr) throw std::bad_alloc();
  fuse_loop_cfg_set_clone_fd(loop.get(), cfg.clone_fd ? 1 : 0);
  // UINT_MAX is libfuse's "not given" (keep every idle thread); passing it
  // on makes libfuse complain.
  if (cfg.max_idle_threads != UINT_MAX) {
    fuse_loop_cfg_set_idle_threads(loop.get(), cfg.max_idle_threads);
  }
  fuse_loop_cfg_set_max_threads(loop.get(), cfg.max_threads);
  return fuse_session_loop_mt(se, loop.get());
}

// Serves an open container at cfg.mountpoint until unmounted. With
// ready_fd, detaches once the mount is live and sets *detached.
Status Serve(Container* container, const Store& store, StoreWriter* writer, const MountConfig& cfg, int ready_fd,
             bool* detached) {
  FsOptions fo;
  fo.read_only = cfg.read_only;
  fo.commit_interval = cfg.commit_interval;
  fo.follow_interval = cfg.follow_interval;
  fo.splice_reads = cfg.splice_reads;
  fo.bulk = cfg.bulk;
  fo.uid = getuid();
  fo.gid = getgid();
  fo.mountpoint = cfg.mountpoint;
  Filesystem fs(container, store, fo, writer);

  FuseArgs args(cfg.fuse_args);
  const fuse_lowlevel_ops& ops = Operations();
  fuse_session* se = fuse_session_new(&args.args, &ops, sizeof ops, &fs);
  if (se == nullptr) {
    return Status::InvalidArgument("cannot start the FUSE session (see libfuse's message)");
  }
  fs.session = se;
  std::unique_ptr<fuse_session, decltype(&fuse_session_destroy)> session(se, &fuse_session_destroy);
  if (fuse_set_signal_handlers(se) != 0) {
    return Status::IOError("cannot install signal handlers");
  }
  // The directory under the mount, held for the daemon's life so that
  // umount-slabfs finds the daemon of a mount point by
  // /proc/PID/fd (readlink gives its absolute path) whatever path the
  // command line gave, and waits for it to exit. An O_PATH descriptor: it
  // reads nothing and does not keep the mount busy.
  struct HeldFd {
    ~HeldFd() {
      if (fd >= 0) close(fd);
    }
    int fd;
  } under{open(cfg.mountpoint.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (under.fd < 0) Log().debug("cannot hold {}: {}", cfg.mountpoint, std::strerror(errno));
  if (fuse_session_mount(se, cfg.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    return Status::IOError(fmt::format("cannot mount at {} (see libfuse's message)", cfg.mountpoint));
  }
  Log().debug("mounted {} at {}", cfg.container, cfg.mountpoint);
  if (ready_fd >= 0) {
    FinishDetach(ready_fd);
    *detached = true;
  }

  int rc = Loop(se, cfg);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  session.reset();  // calls destroy: stops the committer, commits
  if (rc != 0) Log().warn("session loop ended with {}", rc);
  return fs.final_commit.WithContext("commit at unmount");
}

}  // namespace

Status RunDaemon(const MountConfig& cfg) {
  InitLogging(cfg.log_level, cfg.debug);
  if (!cfg.log_file.empty()) SLABFS_RETURN_IF_ERROR(OpenLogFile(cfg.log_file));
  // Before anything is opened: a mount that would hide files or another
  // mount is refused while the user still sees the terminal.
  SLABFS_RETURN_IF_ERROR(CheckMountPoint(cfg.mountpoint, cfg.allow_nonempty));
  int ready_fd = -1;
  if (!cfg.foreground) {
    SLABFS_ASSIGN_OR_RETURN(ready_fd, ForkAndWait());
  }

  if (cfg.format != stores::StoreFormat::kSlab) {
    // An HDF5 / netCDF-4 file (read-only) or a Zarr store (read-write
    // unless ro), through its store.
    stores::ForeignStoreOptions so;
    so.cache_bytes = cfg.cache_bytes;
    so.writable = !cfg.read_only;
    auto store = stores::OpenForeignStore(cfg.container, cfg.format, so);
    if (!store) {
      return store.error().WithContext(
          fmt::format("cannot open {} as {}", cfg.container, stores::StoreFormatName(cfg.format)));
    }
    // The store logged each thing it skipped, by name, as it opened.
    bool detached = false;
    Status served = Serve(nullptr, **store, (*store)->writer(), cfg, ready_fd, &detached);
    if (!served.ok() && detached) Log().error("{}", served.ToString());
    return served;
  }

  OpenOptions oo;
  oo.read_only = cfg.read_only;
  oo.cache_bytes = cfg.cache_bytes;
  oo.cache_max_bytes = cfg.cache_max_bytes;
  oo.reuse_delay_seconds = cfg.reuse_delay_seconds;
  oo.holder = "slabfs";
  oo.holder_mount = cfg.mountpoint;
  auto container = Container::Open(cfg.container, oo);
  if (!container) {
    return container.error().WithContext(fmt::format("cannot open the container {}", cfg.container));
  }

  bool detached = false;
  // The file view reads through the container as a store; it does not own it.
  std::unique_ptr<Store> store = ContainerStore(std::shared_ptr<Container>(container->get(), [](Container*) {}));
  Status served = Serve(container->get(), *store, nullptr, cfg, ready_fd, &detached);
  // Commits anything left (normally nothing: destroy committed).
  Status closed = (*container)->Close();
  Status result = !served.ok() ? served : closed.WithContext("closing the container");
  // Detached, the caller's message would go to /dev/null: the log (file or
  // syslog) is the one place left to say why the last commit failed.
  if (!result.ok() && detached) {
    Log().error("{}", result.ToString());
  }
  return result;
}

}  // namespace slabfs::fusefs
