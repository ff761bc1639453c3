#include "fusefs/filesystem.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "fusefs/follower.h"
#include "fusefs/layout_ops.h"
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

// ------------------------------------------------------------ helpers

timespec FileMTime(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return st.st_mtim;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return now;
}

ObjectInfo InfoOf(const Dataset& ds) {
  DatasetInfo d = ds.info();
  ObjectInfo info;
  info.id = ds.id();
  info.kind = ObjectKind::kDataset;
  info.size_bytes = d.size_bytes;
  info.stored_bytes = d.stored_bytes;
  return info;
}

// The attributes of ino: through the handle when the kernel passes one,
// else by id, else (a dataset removed while open) through an open handle.
// *removed tells the last case.
Result<ObjectInfo> StatOf(Filesystem& fs, fuse_ino_t ino, const fuse_file_info* fi,
                          bool* removed = nullptr) {
  if (removed != nullptr) *removed = false;
  if (FileHandle* fh = AsFile(fi)) return InfoOf(fh->dataset);
  auto info = fs.container.Stat(ino);
  if (!info && info.error().code() == Code::kNotFound) {
    if (auto ds = fs.inodes.OpenFileDataset(ino)) {
      if (removed != nullptr) *removed = true;
      return InfoOf(*ds);
    }
  }
  return info;
}


Status Commit(Filesystem& fs) {
  if (fs.options.read_only) return Status::OK();
  return fs.container.Commit();
}

// A chmod or chown that asks for another mode or owner than the fixed ones:
// ignored, with a debug line.
void LogIgnoredModeChange(Filesystem& fs, fuse_ino_t ino, ObjectKind kind, const struct stat* attr,
                          int to_set) {
  if (!LogsAt(spdlog::level::debug)) return;
  const mode_t mode = ModeFor(kind, fs.options.read_only);
  if ((to_set & FUSE_SET_ATTR_MODE) && (attr->st_mode & 07777) != (mode & 07777)) {
    Log().debug("chmod {} to {:o}: ignored, the mode stays {:o}", Describe(fs, ino),
                static_cast<unsigned>(attr->st_mode & 07777), static_cast<unsigned>(mode & 07777));
  }
  if (((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != fs.stat_ctx.uid) ||
      ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != fs.stat_ctx.gid)) {
    Log().debug("chown {} to {}:{}: ignored, the owner stays {}:{}", Describe(fs, ino),
                (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : fs.stat_ctx.uid,
                (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : fs.stat_ctx.gid, fs.stat_ctx.uid,
                fs.stat_ctx.gid);
  }
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
  // (see SetAttr), and so does a follow mount's refresh for what changed
  // (follower.h).
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  // Writes go through to the engine at once, so that EFBIG reaches the
  // writer and mmap/read see what was written.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  // Replies spliced from the container file (splice_reply.h).
  fs.splice_replies = ShouldSpliceReplies(conn->max_write, fs.options.splice_reads,
                                          (conn->capable & FUSE_CAP_SPLICE_WRITE) != 0);
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
  Log().info("mounted {} ({}, max_write {}, max_readahead {}, {})", fs.container.path(),
             fs.options.read_only ? "read-only" : "read-write", conn->max_write,
             conn->max_readahead,
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
      Log().info("unmounted {}", fs.container.path());
    }
  } catch (const std::exception& e) {
    LogUnexpected("destroy", e.what());
  }
}

// ------------------------------------------------------------ names

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Guard(req, "lookup", [&] {
    Filesystem& fs = Fs(req);
    if (NameTooLong(name)) {
      return RefuseErrno("lookup", DescribeChild(fs, parent, name), ENAMETOOLONG,
                         "names are at most 255 bytes");
    }
    auto id = fs.container.Lookup(parent, name);
    if (!id) {
      // A missing name is an ordinary answer (shells and Python probe all
      // the time).
      if (id.error().code() == Code::kNotFound) {
        // Not a child: perhaps a view of one (views/view_ops.h).
        if (views::LookupView(req, parent, name)) return 0;
        return QuietRefuse("lookup", [&] { return DescribeChild(fs, parent, name); },
                           id.error());
      }
      return Refuse("lookup", DescribeChild(fs, parent, name), id.error());
    }
    auto info = fs.container.Stat(*id);
    if (!info) return Refuse("lookup", DescribeChild(fs, parent, name), info.error());
    fuse_entry_param e = EntryFor(fs, *info);
    fuse_reply_entry(req, &e);
    return 0;
  });
}

void Forget(fuse_req_t req, fuse_ino_t /*ino*/, uint64_t /*nlookup*/) { fuse_reply_none(req); }

void ForgetMulti(fuse_req_t req, size_t /*count*/, fuse_forget_data* /*forgets*/) {
  fuse_reply_none(req);
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "getattr", [&] {
    Filesystem& fs = Fs(req);
    bool removed = false;
    auto info = StatOf(fs, ino, fi, &removed);
    if (!info) return Refuse("getattr", Describe(fs, ino), info.error());
    struct stat st = MakeStat(*info, fs.stat_ctx, fs.inodes.MTime(ino));
    if (info->kind == ObjectKind::kDataset) st.st_size = static_cast<off_t>(fs.inodes.ReportedSize(ino, info->size_bytes));
    if (removed) st.st_nlink = 0;
    fuse_reply_attr(req, &st, fs.options.attr_timeout);
    return 0;
  });
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  Guard(req, "setattr", [&] {
    Filesystem& fs = Fs(req);
    auto info = StatOf(fs, ino, fi);
    if (!info) return Refuse("setattr", Describe(fs, ino), info.error());
    // Modes and owners are not stored: every group and dataset keeps the
    // fixed mode and the mounting user. A change is accepted and ignored,
    // as on vfat, so that tar x, cp -a, rsync -a and unzip, which set the
    // modes of what they make, succeed.
    LogIgnoredModeChange(fs, ino, info->kind, attr, to_set);
    bool cleared = false;
    if (to_set & FUSE_SET_ATTR_SIZE) {
      if (info->kind != ObjectKind::kDataset) {
        return Refuse("truncate", Describe(fs, ino), Status::NotADataset("a group has no size"));
      }
      const auto want = static_cast<uint64_t>(attr->st_size);
      FileHandle* fh = AsFile(fi);
      Result<Dataset> ds = fh != nullptr ? Result<Dataset>(fh->dataset) : fs.container.OpenDataset(ino);
      if (!ds) return Refuse("truncate", Describe(fs, ino), ds.error());
      if (want == info->size_bytes) {
        // Nothing to do.
      } else if (ds->info().length_resizable) {
        // The length of a dataset whose first dimension can change: a whole
        // number of rows (EINVAL otherwise, EFBIG past the max shape).
        Status s = ds->SetSizeBytes(want);
        if (!s.ok()) return Refuse("truncate", Describe(fs, ino), s);
      } else if (want == 0) {
        Status s = ds->Clear();
        if (!s.ok()) return Refuse("truncate", Describe(fs, ino), s);
        cleared = true;
      } else {
        return Refuse("truncate", Describe(fs, ino),
                      Status::InvalidArgument(fmt::format(
                          "size {} requested, the dataset has a fixed size of {} bytes "
                          "(0 resets it to the fill value)",
                          want, info->size_bytes)));
      }
      fs.inodes.ForgetAppendEnd(ino);
      if (want != info->size_bytes) {
        // Committed at close like a write; a truncate(2) by path at once.
        if (fh != nullptr) fh->written.store(true, std::memory_order_relaxed);
        else CommitChange(fs, "truncate", Describe(fs, ino));
        fs.inodes.Touch(ino);
        info = InfoOf(*ds);
      }
    }
    if (to_set & FUSE_SET_ATTR_MTIME_NOW) fs.inodes.Touch(ino);
    else if (to_set & FUSE_SET_ATTR_MTIME) fs.inodes.SetMTime(ino, attr->st_mtim);
    struct stat st = MakeStat(*info, fs.stat_ctx, fs.inodes.MTime(ino));
    if (info->kind == ObjectKind::kDataset) st.st_size = static_cast<off_t>(fs.inodes.ReportedSize(ino, info->size_bytes));
    double timeout = fs.options.attr_timeout;
    if (cleared) {
      // The kernel keeps its cached pages unless the size changes, and
      // they now hold stale data. Answering size 0, valid for no time,
      // makes it drop them before truncate(2) returns (as it does itself
      // for an O_TRUNC open); the next stat or read asks again and gets
      // the real size. Dropping them with an invalidation notice instead
      // would race with the caller's next read, or deadlock on a dirty
      // mmap page while the kernel holds the inode for this setattr.
      st.st_size = 0;
      timeout = 0;
    }
    fuse_reply_attr(req, &st, timeout);
    return 0;
  });
}

// ------------------------------------------------------------ files

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "open", [&] {
    Filesystem& fs = Fs(req);
    fs.TuneReadaheadOnce();
    auto ds = fs.container.OpenDataset(ino);
    if (!ds) return Refuse("open", Describe(fs, ino), ds.error());
    if ((fi->flags & O_ACCMODE) != O_RDONLY && fs.options.read_only) {
      return Refuse("open", Describe(fs, ino), Status::ReadOnly("the mount is read-only"));
    }
    auto fh = std::make_unique<FileHandle>(std::move(*ds));
    fh->writable = (fi->flags & O_ACCMODE) != O_RDONLY;
    // The kernel drops the cached pages itself after an atomic O_TRUNC.
    if (fi->flags & O_TRUNC) {
      // A dataset whose length can change becomes empty (no rows); others
      // are reset to the fill value.
      fs.inodes.ForgetAppendEnd(ino);
      Status s = fh->dataset.info().length_resizable ? fh->dataset.SetSizeBytes(0) : fh->dataset.Clear();
      if (!s.ok()) return Refuse("open (O_TRUNC)", Describe(fs, ino), s);
      fh->written.store(true, std::memory_order_relaxed);
      fs.inodes.Touch(ino);
    }
    // No direct_io, and the cache kept across opens: the page cache serves
    // repeated reads and mmap, and only this daemon changes the data.
    fi->keep_cache = 1;
    fi->direct_io = 0;
    fi->fh = reinterpret_cast<uint64_t>(fh.get());
    fs.inodes.AddOpenFile(fh->dataset);
    fs.layouts.Opened(ino);
    // -ENOENT: the open was interrupted and the kernel will not release it.
    if (fuse_reply_open(req, fi) == -ENOENT) {
      fs.inodes.DropOpenFile(ino);
      fs.layouts.Closed(ino);
      return 0;
    }
    fh.release();
    return 0;
  });
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Guard(req, "read", [&] {
    FileHandle* fh = AsFile(fi);
    if (fh == nullptr) {
      return RefuseErrno("read", Describe(Fs(req), ino), EBADF, "no file handle");
    }
    const Dataset ds = fh->dataset;  // a reference of our own (FileHandle::uses)
    fh->DoneWith();
    if (Fs(req).splice_replies) {
      auto spliced = ReplyFromFile(req, ds, static_cast<uint64_t>(off), size);
      if (!spliced) {
        return Refuse("read", fmt::format("{} [{}, +{})", Describe(Fs(req), ino), off, size),
                      spliced.error());
      }
      if (*spliced) return 0;
    }
    char* buf = ReadBuffer(size);
    auto n = ds.ReadBytes(static_cast<uint64_t>(off), size, buf);
    if (!n) {
      return Refuse("read", fmt::format("{} [{}, +{})", Describe(Fs(req), ino), off, size),
                    n.error());
    }
    fuse_reply_buf(req, buf, *n);
    return 0;
  });
}

void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
           fuse_file_info* fi) {
  Guard(req, "write", [&] {
    Filesystem& fs = Fs(req);
    FileHandle* fh = AsFile(fi);
    if (fh == nullptr) return RefuseErrno("write", Describe(fs, ino), EBADF, "no file handle");
    // A write past the end grows a dataset whose first dimension can grow
    // (whole rows), so `cat frame >> stream` appends. A write that reaches
    // past the largest size (a fixed dataset's size, the maximum shape)
    // stores what fits and answers a short count, as write(2) does at a
    // file size limit; the caller's next write, at the end, is EFBIG. So
    // `cp` of a longer file over a fixed dataset leaves the start of the
    // new bytes there, never the fill value of the O_TRUNC open alone.
    Dataset ds = fh->dataset;  // a reference of our own (FileHandle::uses)
    const uint64_t old_size = ds.size_bytes();
    auto n = ds.WriteBytesUpTo(static_cast<uint64_t>(off), size, buf, Dataset::Growth::kGrowRows);
    if (!n) {
      fh->DoneWith();
      return Refuse("write", fmt::format("{} [{}, +{})", Describe(fs, ino), off, size), n.error());
    }
    if (*n < size) {
      Log().info("write {} [{}, +{}): {} bytes fit before the end of the dataset ({} bytes); the rest is refused",
                 Describe(fs, ino), off, size, *n, ds.size_bytes());
    }
    fs.inodes.NoteWriteEnd(ino, fh, static_cast<uint64_t>(off) + *n, old_size, ds.size_bytes());
    fh->written.store(true, std::memory_order_relaxed);
    fh->DoneWith();
    fs.inodes.Touch(ino);
    fuse_reply_write(req, *n);
    return 0;
  });
}

// Writes to this dataset the engine accepted but had to drop (a partial
// write into a chunk whose stored bytes are damaged): EIO once, to the next
// flush or fsync of a descriptor open for writing, as the kernel reports a
// failed page write-back. A reader's close never takes it.
int ReportLostWrites(std::string_view op, Filesystem& fs, fuse_ino_t ino, const fuse_file_info* fi) {
  FileHandle* fh = AsFile(fi);
  if (fh == nullptr || !fh->writable) return 0;
  Status lost = fh->dataset.TakeLostWrites();
  if (!lost.ok()) return Refuse(op, Describe(fs, ino), lost);
  return 0;
}

// Commits when this handle was written through since its last commit.
// Flush runs in every close(2) of a descriptor of the handle, so a
// writer's close returns once its data is durable (and a commit failure
// reaches close as an error); release catches writes that arrive after the
// last flush (mmap write-back).
//
// A handle is shared by the descriptors that dup(2) and fork(2) make, and
// each of their closes flushes. The first close after a write takes the
// mark and commits; a close that finds no mark may only return once that
// commit is done, since it may hold this process's writes (a child that
// closes its inherited copy while the parent closes too). So the mark is
// taken and the commit made under the handle's commit_mu, and a failed
// commit puts the mark back for the next close to try again and report.
int CommitIfWritten(fuse_req_t req, std::string_view op, fuse_ino_t ino, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  FileHandle* fh = AsFile(fi);
  // -o bulk: the commit timer, fsync or the unmount makes it durable.
  if (fh != nullptr && !fs.options.bulk) {
    std::lock_guard lock(fh->commit_mu);
    if (fh->written.exchange(false)) {
      Status s = Commit(fs);
      if (!s.ok()) {
        fh->written.store(true);
        return Refuse(op, Describe(fs, ino), s.WithContext("commit"));
      }
    }
  }
  return ReportLostWrites(op, fs, ino, fi);
}

// Closing the handle that appended a partial row: the row is padded with
// fill from now on, so the kernel must forget the size it cached. Only the
// attributes are dropped (offset -1), which is safe inside a flush.
void EndAppend(Filesystem& fs, fuse_ino_t ino, const FileHandle* fh) {
  if (fh == nullptr || !fs.inodes.EndAppend(ino, fh) || fs.session == nullptr) return;
  int err = fuse_lowlevel_notify_inval_inode(fs.session, ino, -1, 0);
  if (err != 0 && err != -ENOENT) Log().debug("attribute invalidation of inode {}: {}", ino, strerror(-err));
}

void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "flush", [&] {
    // A new file's last close gives it its layout (see layout_ops.h);
    // the commit below makes that durable with its bytes.
    FileHandle* fh = AsFile(fi);
    if (fh != nullptr && fh->writable) {
      if (int err = FinishNewFile(Fs(req), ino, fh->dataset)) return err;
    }
    const int err = CommitIfWritten(req, "flush", ino, fi);
    EndAppend(Fs(req), ino, AsFile(fi));  // the append ends even if the commit failed
    if (err) return err;
    fuse_reply_err(req, 0);
    return 0;
  });
}

void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  // Whatever happens, the handle and its bookkeeping go away.
  struct Drop {
    ~Drop() {
      if (fh == nullptr) return;
      const ObjectId id = fh->dataset.id();
      (void)fh->uses.load(std::memory_order_acquire);  // after every read and write (FileHandle::uses)
      delete fh;
      fs.inodes.DropOpenFile(id);
      fs.layouts.Closed(id);
    }
    Filesystem& fs;
    FileHandle* fh;
  } drop{Fs(req), AsFile(fi)};
  Guard(req, "release", [&] {
    Filesystem& fs = Fs(req);
    FileHandle* fh = AsFile(fi);
    if (fh != nullptr && fs.layouts.HasWork(ino)) {
      // user.slab.* fields set after the flush (rsync -X sets them by path
      // once it has closed the file) are applied now; see layout_ops.h.
      if (int err = FinishNewFile(fs, ino, fh->dataset)) return err;
      CommitChange(fs, "release", Describe(fs, ino));
    }
    const int err = CommitIfWritten(req, "release", ino, fi);
    EndAppend(Fs(req), ino, AsFile(fi));
    if (err) return err;
    fuse_reply_err(req, 0);
    return 0;
  });
}

void FSync(fuse_req_t req, fuse_ino_t ino, int /*datasync*/, fuse_file_info* fi) {
  Guard(req, "fsync", [&] {
    Filesystem& fs = Fs(req);
    Status s = Commit(fs);
    if (!s.ok()) return Refuse("fsync", Describe(fs, ino), s.WithContext("commit"));
    if (int err = ReportLostWrites("fsync", fs, ino, fi)) return err;
    fuse_reply_err(req, 0);
    return 0;
  });
}

// ------------------------------------------------------------ directories

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "opendir", [&] {
    Filesystem& fs = Fs(req);
    auto entries = fs.container.List(ino);
    if (!entries) return Refuse("opendir", Describe(fs, ino), entries.error());
    auto dh = std::make_unique<DirHandle>();
    dh->entries = std::move(*entries);
    fi->fh = reinterpret_cast<uint64_t>(dh.get());
    if (fuse_reply_open(req, fi) != -ENOENT) dh.release();
    return 0;
  });
}

// Fills buf with the entries from offset `off` on and returns the bytes
// used. Offsets: 0 is ".", 1 is "..", 2 + i is entries[i]; each entry
// carries the offset of the next.
Result<size_t> FillDir(fuse_req_t req, Filesystem& fs, fuse_ino_t ino, DirHandle* dh, char* buf,
                       size_t size, off_t off, bool plus) {
  std::lock_guard lock(dh->mu);
  if (off == 0 && dh->read_once) {  // rewinddir: show changes since opendir
    SLABFS_ASSIGN_OR_RETURN(dh->entries, fs.container.List(ino));
  }
  dh->read_once = true;
  size_t used = 0;
  for (auto i = static_cast<uint64_t>(off); i < dh->entries.size() + 2; ++i) {
    const char* name;
    fuse_entry_param e{};
    if (i < 2) {
      name = i == 0 ? "." : "..";
      // Not linked by the kernel (ino 0); only the type and number show.
      e.attr.st_ino = i == 0 ? ino : FUSE_ROOT_ID;
      e.attr.st_mode = S_IFDIR;
    } else {
      const Entry& entry = dh->entries[i - 2];
      name = entry.name.c_str();
      if (plus) {
        auto info = fs.container.Stat(entry.id);
        if (!info) continue;  // removed since the listing
        e = EntryFor(fs, *info);
      } else {
        e.attr.st_ino = entry.id;
        e.attr.st_mode = ModeFor(entry.kind, fs.options.read_only);
      }
    }
    const auto next = static_cast<off_t>(i + 1);
    size_t need = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name, &e, next)
                       : fuse_add_direntry(req, buf + used, size - used, name, &e.attr, next);
    if (need > size - used) break;  // not sent, so not counted as a lookup
    used += need;
  }
  return used;
}

int ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                  bool plus) {
  Filesystem& fs = Fs(req);
  DirHandle* dh = AsDir(fi);
  if (dh == nullptr) return RefuseErrno("readdir", Describe(fs, ino), EBADF, "no dir handle");
  auto buf = std::make_unique_for_overwrite<char[]>(size);
  auto used = FillDir(req, fs, ino, dh, buf.get(), size, off, plus);
  if (!used) return Refuse("readdir", Describe(fs, ino), used.error());
  // After the reply the kernel may release the directory at once (another
  // thread deletes dh), so nothing of dh, not even its lock, is touched
  // after this.
  fuse_reply_buf(req, buf.get(), *used);
  return 0;
}

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Guard(req, "readdir", [&] { return ReadDirCommon(req, ino, size, off, fi, false); });
}

void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Guard(req, "readdirplus", [&] { return ReadDirCommon(req, ino, size, off, fi, true); });
}

void ReleaseDir(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  Guard(req, "releasedir", [&] {
    std::unique_ptr<DirHandle> owned(AsDir(fi));
    fuse_reply_err(req, 0);
    return 0;
  });
}

void FSyncDir(fuse_req_t req, fuse_ino_t ino, int /*datasync*/, fuse_file_info* /*fi*/) {
  Guard(req, "fsyncdir", [&] {
    Filesystem& fs = Fs(req);
    Status s = Commit(fs);
    if (!s.ok()) return Refuse("fsyncdir", Describe(fs, ino), s.WithContext("commit"));
    fuse_reply_err(req, 0);
    return 0;
  });
}

void StatFs(fuse_req_t req, fuse_ino_t /*ino*/) {
  Guard(req, "statfs", [&] {
    Filesystem& fs = Fs(req);
    SpaceInfo sp = fs.container.space();
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

fuse_entry_param EntryFor(Filesystem& fs, const ObjectInfo& info) {
  fuse_entry_param e{};
  e.ino = info.id;
  e.generation = 0;  // ids are never reused
  e.attr = MakeStat(info, fs.stat_ctx, fs.inodes.MTime(info.id));
  if (info.kind == ObjectKind::kDataset) e.attr.st_size = static_cast<off_t>(fs.inodes.ReportedSize(info.id, info.size_bytes));
  e.attr_timeout = fs.options.attr_timeout;
  e.entry_timeout = fs.options.entry_timeout;
  return e;
}

void CommitChange(Filesystem& fs, std::string_view op, std::string_view what) {
  if (fs.options.bulk) return;  // the commit timer, fsync or the unmount commits it
  Status s = Commit(fs);
  if (!s.ok()) {
    Log().error("{} {}: the change is made but its commit failed ({}); the periodic commit retries",
                op, what, s.ToString());
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
  h.forget_attributes = [&fs](uint64_t ino) {
    fs.invalidator.Post(ino, -1, 0, std::chrono::milliseconds(0));
  };
  h.touch = [&fs](uint64_t ino) { fs.inodes.Touch(ino); };
  return h;
}

}  // namespace

// ------------------------------------------------------------ Filesystem

Filesystem::Filesystem(Container* c, const FsOptions& o)
    : container(*c),
      options(o),
      stat_ctx{.uid = o.uid, .gid = o.gid, .read_only = o.read_only},
      inodes(FileMTime(c->path())),
      committer(
          o.read_only ? std::chrono::milliseconds(0) : o.commit_interval,
          [c] { return c->dirty(); }, [c] { return c->Commit(); }),
      follower(
          o.read_only ? o.follow_interval : std::chrono::milliseconds(0), [] { return true; },
          [this] { return FollowStep(container, FollowHooksOf(*this)); }, "follow refresh"),
      invalidator([this](uint64_t ino, int64_t offset, int64_t length) {
        return session != nullptr ? fuse_lowlevel_notify_inval_inode(session, ino, offset, length)
                                  : -ENOTCONN;
      }) {}

void Filesystem::TuneReadaheadOnce() {
  if (options.readahead_bytes == 0 || options.mountpoint.empty()) return;
  std::call_once(readahead_once, [this] {
    std::string why = SetMountReadahead(options.mountpoint, options.readahead_bytes);
    if (why.empty()) {
      Log().debug("readahead of {} set to {} KiB", options.mountpoint,
                  options.readahead_bytes >> 10);
    } else {
      Log().info("readahead stays at the kernel's default: {}", why);
    }
  });
}

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
    o.setattr = views::Route<SetAttr, views::SetAttr>::Call;
    o.mknod = MkNod;
    o.create = Create;
    o.mkdir = MkDir;
    o.unlink = Unlink;
    o.rmdir = RmDir;
    o.rename = Rename;
    o.symlink = Symlink;
    o.link = Link;
    o.open = views::Route<Open, views::Open>::Call;
    o.read = views::Route<Read, views::Read>::Call;
    o.write = views::Route<Write, views::Write>::Call;
    o.flush = views::Route<Flush, views::Flush>::Call;
    o.release = views::Route<Release, views::Release>::Call;
    o.fsync = views::Route<FSync, views::FSync>::Call;
    o.opendir = OpenDir;
    o.readdir = ReadDir;
    o.readdirplus = ReadDirPlus;
    o.releasedir = ReleaseDir;
    o.fsyncdir = FSyncDir;
    o.statfs = StatFs;
    o.setxattr = views::Route<SetXattr, views::SetXattr>::Call;
    o.getxattr = views::Route<GetXattr, views::GetXattr>::Call;
    o.listxattr = views::Route<ListXattr, views::ListXattr>::Call;
    o.removexattr = views::Route<RemoveXattr, views::RemoveXattr>::Call;
    o.fallocate = views::Route<Fallocate, views::Fallocate>::Call;
    o.lseek = views::Route<Lseek, views::Lseek>::Call;
    return o;
  }();
  return ops;
}

}  // namespace slabfs::fusefs
