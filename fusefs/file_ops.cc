#include "fusefs/file_ops.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "fusefs/layout_ops.h"
#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/splice_reply.h"
#include "fusefs/stale_end_page.h"
#include "fusefs/store_changes.h"

namespace slabfs::fusefs {

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "open", [&] {
    Filesystem& fs = Fs(req);
    fs.TuneReadaheadOnce();
    if ((fi->flags & O_ACCMODE) != O_RDONLY &&
        (fs.options.read_only || (fs.container == nullptr && fs.writer == nullptr))) {
      return Refuse("open", Describe(fs, ino), Status::ReadOnly("the mount is read-only"));
    }
    auto data = OpenFileData(fs, ino);
    if (!data) return Refuse("open", Describe(fs, ino), data.error());
    auto fh = std::make_unique<FileHandle>(std::move(*data));
    fh->writable = (fi->flags & O_ACCMODE) != O_RDONLY;
    // The kernel drops the cached pages itself after an atomic O_TRUNC.
    if (fi->flags & O_TRUNC) {
      // A dataset whose length can change becomes empty (no rows); others
      // are reset to the fill value.
      fs.inodes.ForgetAppendEnd(ino);
      Status s;
      if (fh->data.slab() == nullptr) {
        s = TruncateInStore(fs, fh->data, 0);
      } else {
        Dataset& ds = fh->dataset();
        s = ds.info().length_resizable ? ds.SetSizeBytes(0) : ds.Clear();
      }
      if (!s.ok()) return Refuse("open (O_TRUNC)", Describe(fs, ino), s);
      if (fh->data.slab() != nullptr) fs.layouts.NoteTruncated(ino);
      fh->written.store(true, std::memory_order_relaxed);
      fs.inodes.Touch(ino);
    }
    // No direct_io, and the cache kept across opens: the page cache serves
    // repeated reads and mmap, and only this daemon changes the data.
    fi->keep_cache = 1;
    fi->direct_io = 0;
    fi->fh = reinterpret_cast<uint64_t>(fh.get());
    if (const Dataset* slab = fh->data.slab()) {
      fs.inodes.AddOpenFile(*slab);
    } else {
      fs.inodes.AddOpenFile(ino);
    }
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
    const FileData ds = fh->data;  // a reference of our own (FileHandle::uses)
    fh->DoneWith();
    if (Fs(req).splice_replies && ds.slab() != nullptr) {
      auto spliced = ReplyFromFile(req, *ds.slab(), static_cast<uint64_t>(off), size);
      if (!spliced) {
        return Refuse("read", fmt::format("{} [{}, +{})", Describe(Fs(req), ino), off, size), spliced.error());
      }
      if (*spliced) return 0;
    }
    char* buf = ReadBuffer(size);
    auto n = ds.ReadBytes(static_cast<uint64_t>(off), size, buf);
    if (!n) {
      return Refuse("read", fmt::format("{} [{}, +{})", Describe(Fs(req), ino), off, size), n.error());
    }
    fuse_reply_buf(req, buf, *n);
    return 0;
  });
}

void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
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
    if (!fh->writable) {
      fh->DoneWith();
      return RefuseErrno("write", Describe(fs, ino), EBADF, "the file is open read-only");
    }
    if (fh->data.slab() == nullptr) return WriteToStore(req, fs, ino, fh, buf, size, off);
    Dataset ds = fh->dataset();  // a reference of our own (FileHandle::uses)
    const uint64_t old_size = ds.size_bytes();
    const uint64_t told_size = fs.inodes.ReportedSize(ino, old_size);  // the end the kernel knows
    auto n = ds.WriteBytesUpTo(static_cast<uint64_t>(off), size, buf, Dataset::Growth::kGrowRows);
    if (!n) {
      fh->DoneWith();
      return Refuse("write", fmt::format("{} [{}, +{})", Describe(fs, ino), off, size), n.error());
    }
    if (*n < size) {
      Log().info("write {} [{}, +{}): {} bytes fit before the end of the dataset ({} bytes); the rest is refused",
                 Describe(fs, ino), off, size, *n, ds.size_bytes());
    }
    const uint64_t new_size = ds.size_bytes();
    fs.inodes.NoteWriteEnd(ino, fh, static_cast<uint64_t>(off) + *n, old_size, new_size);
    fh->written.store(true, std::memory_order_relaxed);
    fh->DoneWith();
    fs.inodes.Touch(ino);
    // A gap between the end the kernel knew and the write reads as the
    // fill value.
    if (static_cast<uint64_t>(off) > told_size) {
      DropStaleEndPage(fs, ino, ds.info().fill, told_size, static_cast<uint64_t>(off), static_cast<uint64_t>(off),
                       static_cast<uint64_t>(off) + *n);
    }
    fuse_reply_write(req, *n);
    return 0;
  });
}

namespace {

// Writes to this dataset the engine accepted but had to drop (a partial
// write into a chunk whose stored bytes are damaged): EIO once, to the next
// flush or fsync of a descriptor open for writing, as the kernel reports a
// failed page write-back. A reader's close never takes it.
int ReportLostWrites(std::string_view op, Filesystem& fs, fuse_ino_t ino, const fuse_file_info* fi) {
  FileHandle* fh = AsFile(fi);
  if (fh == nullptr || !fh->writable || fh->data.slab() == nullptr) return 0;
  Status lost = fh->dataset().TakeLostWrites();
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

}  // namespace

void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "flush", [&] {
    // A new file's last close gives it its layout (see layout_ops.h);
    // the commit below makes that durable with its bytes.
    FileHandle* fh = AsFile(fi);
    if (fh != nullptr && fh->writable && fh->data.slab() != nullptr) {
      if (int err = FinishNewFile(Fs(req), ino, fh->dataset())) return err;
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
      const ObjectId id = fh->data.id();
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
    if (fh != nullptr && fh->data.slab() != nullptr && fs.layouts.HasWork(ino)) {
      // user.slab.* fields set after the flush (rsync -X sets them by path
      // once it has closed the file) are applied now; see layout_ops.h.
      if (int err = FinishNewFile(fs, ino, fh->dataset())) return err;
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

}  // namespace slabfs::fusefs
