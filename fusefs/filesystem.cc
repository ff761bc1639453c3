#include "fusefs/filesystem.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fusefs/attr_ops.h"
#include "fusefs/dir_ops.h"
#include "fusefs/file_ops.h"
#include "fusefs/follower.h"
#include "fusefs/log.h"
#include "fusefs/namespace_ops.h"
#include "fusefs/readahead.h"
#include "fusefs/request.h"
#include "fusefs/sparse_ops.h"
#include "fusefs/splice_reply.h"
#include "fusefs/views/view_ops.h"
#include "fusefs/xattr_ops.h"

namespace slabfs::fusefs {
namespace {

timespec FileMTime(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return st.st_mtim;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return now;
}

// ------------------------------------------------------------ lifecycle

void Init(void* userdata, fuse_conn_info* conn) {
  auto& fs = *static_cast<Filesystem*>(userdata);
  // Large requests: libfuse derives max_pages from max_write and caps both
  // at its 1 MiB buffer. max_read stays as libfuse set it (it must match
  // the max_read mount option), and max_readahead stays at the kernel's
  // offer, which is the most it accepts.
  conn->max_write = 1u << 20;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  // O_TRUNC arrives in open, and the kernel drops the page cache itself.
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  // Only this daemon changes the data (a read-write mount holds the lock, a
  // read-only one reads a snapshot), so the page cache stays valid across
  // opens and attribute refreshes; a reset to fill makes the kernel drop it
  // (see SetAttr in attr_ops.cc), and so does a follow mount's refresh for what changed
  // (follower.h).
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  // Writes go through to the engine at once, so that EFBIG reaches the
  // writer and mmap/read see what was written.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  // Replies spliced from the container file (splice_reply.h).
  fs.splice_replies =
      ShouldSpliceReplies(conn->max_write, fs.options.splice_reads, (conn->capable & FUSE_CAP_SPLICE_WRITE) != 0);
  if (fs.splice_replies) {
    conn->want |= FUSE_CAP_SPLICE_WRITE;
  } else {
    conn->want &= ~FUSE_CAP_SPLICE_WRITE;
  }
  try {
    fs.committer.Start();
    fs.invalidator.Start();
    fs.follower.Start();
  } catch (const std::exception& e) {
    LogUnexpected("init", e.what());
  }
  Log().info("mounted {} {} ({}, max_write {}, max_readahead {}, {})", fs.store.format(), fs.store.path(),
             fs.options.read_only ? "read-only" : "read-write", conn->max_write, conn->max_readahead,
             fs.splice_replies ? "spliced reads" : "copied reads");
}

void Destroy(void* userdata) {
  auto& fs = *static_cast<Filesystem*>(userdata);
  try {
    fs.follower.Stop();
    fs.committer.Stop();
    fs.invalidator.Stop();
    fs.final_commit = Commit(fs);
    if (!fs.final_commit.ok()) {
      Log().error("commit at unmount failed: {}", fs.final_commit.ToString());
    } else {
      Log().info("unmounted {}", fs.store.path());
    }
  } catch (const std::exception& e) {
    LogUnexpected("destroy", e.what());
  }
}

// ------------------------------------------------------------ the whole mount

// Ids are never reused: the kernel's lookup counts need no bookkeeping.
void Forget(fuse_req_t req, fuse_ino_t /*ino*/, uint64_t /*nlookup*/) { fuse_reply_none(req); }

void ForgetMulti(fuse_req_t req, size_t /*count*/, fuse_forget_data* /*forgets*/) { fuse_reply_none(req); }

void StatFs(fuse_req_t req, fuse_ino_t /*ino*/) {
  Guard(req, "statfs", [&] {
    Filesystem& fs = Fs(req);
    SpaceInfo sp = SpaceOf(fs);
    constexpr uint64_t kBlock = 4096;
    // The container can grow into the free space of the disk it lives on.
    struct statvfs st {};
    st.f_bsize = kBlock;
    st.f_frsize = kBlock;
    st.f_blocks = (sp.file_bytes + sp.disk_free_bytes) / kBlock;
    st.f_bfree = (sp.free_bytes + sp.disk_free_bytes) / kBlock;
    st.f_bavail = st.f_bfree;
    st.f_ffree = 1ull << 32;  // ids are 64-bit: objects are limited by space only
    st.f_files = sp.num_objects + st.f_ffree;
    st.f_favail = st.f_ffree;
    st.f_namemax = kMaxNameBytes;
    fuse_reply_statfs(req, &st);
    return 0;
  });
}

}  // namespace

SpaceInfo SpaceOf(Filesystem& fs) {
  if (fs.container != nullptr) return fs.container->space();
  SpaceInfo sp;
  struct stat st {};
  if (::stat(fs.store.path().c_str(), &st) == 0 && S_ISREG(st.st_mode))
    sp.file_bytes = static_cast<uint64_t>(st.st_size);
  struct statvfs disk {};
  if (::statvfs(fs.store.path().c_str(), &disk) == 0) {
    sp.disk_free_bytes = static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize;
  }
  return sp;
}

Result<FileData> OpenFileData(Filesystem& fs, ObjectId id) {
  if (fs.container != nullptr) {
    SLABFS_ASSIGN_OR_RETURN(Dataset ds, fs.container->OpenDataset(id));
    return FileData(std::move(ds));
  }
  if (fs.writer != nullptr) {
    SLABFS_ASSIGN_OR_RETURN(std::shared_ptr<WritableStoreDataset> ds, fs.writer->OpenDatasetForWriting(id));
    return FileData(id, std::move(ds));
  }
  SLABFS_ASSIGN_OR_RETURN(std::shared_ptr<const StoreDataset> ds, fs.store.OpenDataset(id));
  return FileData(id, std::move(ds));
}

Status Commit(Filesystem& fs) {
  if (fs.options.read_only) return Status::OK();
  if (fs.container == nullptr) return fs.writer != nullptr ? fs.writer->Sync() : Status::OK();
  return fs.container->Commit();
}

void CommitChange(Filesystem& fs, std::string_view op, std::string_view what) {
  if (fs.options.bulk) return;  // the commit timer, fsync or the unmount commits it
  Status s = Commit(fs);
  if (!s.ok()) {
    // A container's commit timer retries; a store has no timer, and its
    // next sync (fsync, the close of a written file, the unmount) does.
    Log().error("{} {}: the change is made but its {} failed ({}); {}", op, what,
                fs.container != nullptr ? "commit" : "sync", s.ToString(),
                fs.container != nullptr ? "the periodic commit retries"
                                        : "the next fsync, close of a written file or the unmount retries");
  }
}

namespace {

// What a follow refresh tells the kernel (follower.h).
FollowHooks FollowHooksOf(Filesystem& fs) {
  FollowHooks h;
  h.forget_name = [&fs](uint64_t parent, std::string_view name) {
    if (fs.session == nullptr) return;
    const int err = fuse_lowlevel_notify_inval_entry(fs.session, parent, name.data(), name.size());
    if (err != 0 && err != -ENOENT) {
      Log().debug("forgetting the name {} in inode {}: {}", name, parent, strerror(-err));
    }
  };
  h.forget_data = [&fs](uint64_t ino) { fs.invalidator.Post(ino, 0, 0, std::chrono::milliseconds(0)); };
  h.forget_attributes = [&fs](uint64_t ino) { fs.invalidator.Post(ino, -1, 0, std::chrono::milliseconds(0)); };
  h.touch = [&fs](uint64_t ino) { fs.inodes.Touch(ino); };
  return h;
}

}  // namespace

// ------------------------------------------------------------ Filesystem

Filesystem::Filesystem(Container* c, const Store& s, const FsOptions& o, StoreWriter* w)
    : container(c),
      store(s),
      writer(o.read_only ? nullptr : w),
      options(o),
      stat_ctx{.uid = o.uid, .gid = o.gid, .read_only = o.read_only},
      inodes(FileMTime(s.path())),
      committer(
          o.read_only || c == nullptr ? std::chrono::milliseconds(0) : o.commit_interval,
          [c] { return c != nullptr && c->dirty(); }, [c] { return c != nullptr ? c->Commit() : Status::OK(); }),
      follower(
          o.read_only && c != nullptr ? o.follow_interval : std::chrono::milliseconds(0), [] { return true; },
          [this] { return FollowStep(*container, FollowHooksOf(*this)); }, "follow refresh"),
      invalidator([this](uint64_t ino, int64_t offset, int64_t length) {
        return session != nullptr ? fuse_lowlevel_notify_inval_inode(session, ino, offset, length) : -ENOTCONN;
      }) {}

void Filesystem::TuneReadaheadOnce() {
  if (options.readahead_bytes == 0 || options.mountpoint.empty()) return;
  std::call_once(readahead_once, [this] {
    std::string why = SetMountReadahead(options.mountpoint, options.readahead_bytes);
    if (why.empty()) {
      Log().debug("readahead of {} set to {} KiB", options.mountpoint, options.readahead_bytes >> 10);
    } else {
      Log().info("readahead stays at the kernel's default: {}", why);
    }
  });
}

namespace {

// The operations that change the tree, a dataset or an attribute. A
// foreign store's mount has no container to change: on a writable store's
// mount (Filesystem::writer) the operations it makes (kStores: write,
// truncate, setxattr, removexattr, mkdir; store_changes.h) reach their
// handlers and the others answer ENOTSUP; on a read-only one (an HDF5
// file, `-o ro`; the kernel refuses most of these first) each answers
// EROFS. Every refusal is logged, before its handler is reached.
template <auto Op, const char* Name, bool kStores = false>
struct Changing;
template <typename... A, void (*Op)(fuse_req_t, A...), const char* Name, bool kStores>
struct Changing<Op, Name, kStores> {
  static void Call(fuse_req_t req, A... a) {
    Filesystem& fs = Fs(req);
    if (fs.container != nullptr || (kStores && fs.writer != nullptr)) return Op(req, a...);
    Guard(req, Name, [&] {
      if (fs.writer != nullptr) {
        return RefuseErrno(Name, fs.store.path(), ENOTSUP,
                           fmt::format("{} stores are changed by write, truncate, setxattr, removexattr and mkdir "
                                       "only (docs/mount.md)",
                                       fs.store.format()));
      }
      return RefuseErrno(Name, fs.store.path(), EROFS,
                         fmt::format("{} stores are mounted read-only", fs.store.format()));
    });
  }
};
constexpr char kSetAttr[] = "setattr", kMkNod[] = "mknod", kCreate[] = "create", kMkDir[] = "mkdir",
               kUnlink[] = "unlink", kRmDir[] = "rmdir", kRename[] = "rename", kSymlink[] = "symlink", kLink[] = "link",
               kWrite[] = "write", kSetXattr[] = "setxattr", kRemoveXattr[] = "removexattr", kFallocate[] = "fallocate";

}  // namespace

const fuse_lowlevel_ops& Operations() {
  static const fuse_lowlevel_ops ops = [] {
    fuse_lowlevel_ops o{};
    o.init = Init;
    o.destroy = Destroy;
    o.lookup = Lookup;
    // Operations on an inode go to views/view_ops.h for a view's.
    o.forget = views::Route<Forget, views::Forget>::Call;
    o.forget_multi = [](fuse_req_t req, size_t count, fuse_forget_data* forgets) {
      views::ForgetMulti(req, count, forgets, ForgetMulti);
    };
    o.getattr = views::Route<GetAttr, views::GetAttr>::Call;
    o.setattr = Changing<views::Route<SetAttr, views::SetAttr>::Call, kSetAttr, true>::Call;
    o.mknod = Changing<MkNod, kMkNod>::Call;
    o.create = Changing<Create, kCreate>::Call;
    o.mkdir = Changing<MkDir, kMkDir, true>::Call;
    o.unlink = Changing<Unlink, kUnlink>::Call;
    o.rmdir = Changing<RmDir, kRmDir>::Call;
    o.rename = Changing<Rename, kRename>::Call;
    o.symlink = Changing<Symlink, kSymlink>::Call;
    o.link = Changing<Link, kLink>::Call;
    o.open = views::Route<Open, views::Open>::Call;
    o.read = views::Route<Read, views::Read>::Call;
    o.write = Changing<views::Route<Write, views::Write>::Call, kWrite, true>::Call;
    o.flush = views::Route<Flush, views::Flush>::Call;
    o.release = views::Route<Release, views::Release>::Call;
    o.fsync = views::Route<FSync, views::FSync>::Call;
    o.opendir = OpenDir;
    o.readdir = ReadDir;
    o.readdirplus = ReadDirPlus;
    o.releasedir = ReleaseDir;
    o.fsyncdir = FSyncDir;
    o.statfs = StatFs;
    o.setxattr = Changing<views::Route<SetXattr, views::SetXattr>::Call, kSetXattr, true>::Call;
    o.getxattr = views::Route<GetXattr, views::GetXattr>::Call;
    o.listxattr = views::Route<ListXattr, views::ListXattr>::Call;
    o.removexattr = Changing<views::Route<RemoveXattr, views::RemoveXattr>::Call, kRemoveXattr, true>::Call;
    o.fallocate = Changing<views::Route<Fallocate, views::Fallocate>::Call, kFallocate>::Call;
    o.lseek = views::Route<Lseek, views::Lseek>::Call;
    return o;
  }();
  return ops;
}

}  // namespace slabfs::fusefs
