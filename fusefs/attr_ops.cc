#include "fusefs/attr_ops.h"

#include <sys/stat.h>

#include <cstdint>

#include <fmt/format.h>

#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/store_changes.h"

namespace slabfs::fusefs {
namespace {

ObjectInfo InfoOf(const FileData& ds) {
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
Result<ObjectInfo> StatOf(Filesystem& fs, fuse_ino_t ino, const fuse_file_info* fi, bool* removed = nullptr) {
  if (removed != nullptr) *removed = false;
  if (FileHandle* fh = AsFile(fi)) return InfoOf(fh->data);
  auto info = fs.store.Stat(ino);
  if (!info && info.error().code() == Code::kNotFound) {
    if (auto ds = fs.inodes.OpenFileDataset(ino)) {
      if (removed != nullptr) *removed = true;
      return InfoOf(FileData(*ds));
    }
  }
  return info;
}

// A chmod or chown that asks for another mode or owner than the fixed ones:
// ignored, with a debug line.
void LogIgnoredModeChange(Filesystem& fs, fuse_ino_t ino, ObjectKind kind, const struct stat* attr, int to_set) {
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
                (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : fs.stat_ctx.gid, fs.stat_ctx.uid, fs.stat_ctx.gid);
  }
}

// The stat of an object on this mount: its mtime and a dataset's reported
// size come from the inode table.
struct stat StatFor(Filesystem& fs, const ObjectInfo& info) {
  struct stat st = MakeStat(info, fs.stat_ctx, fs.inodes.MTime(info.id));
  if (info.kind == ObjectKind::kDataset)
    st.st_size = static_cast<off_t>(fs.inodes.ReportedSize(info.id, info.size_bytes));
  return st;
}

}  // namespace

fuse_entry_param EntryFor(Filesystem& fs, const ObjectInfo& info) {
  fuse_entry_param e{};
  e.ino = info.id;
  e.generation = 0;  // ids are never reused
  e.attr = StatFor(fs, info);
  e.attr_timeout = fs.options.attr_timeout;
  e.entry_timeout = fs.options.entry_timeout;
  return e;
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "getattr", [&] {
    Filesystem& fs = Fs(req);
    bool removed = false;
    auto info = StatOf(fs, ino, fi, &removed);
    if (!info) return Refuse("getattr", Describe(fs, ino), info.error());
    struct stat st = StatFor(fs, *info);
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
    // A read-only foreign store is never written (the kernel refuses these
    // on its read-only mount first).
    if (fs.container == nullptr && fs.writer == nullptr) {
      return Refuse("setattr", Describe(fs, ino), Status::ReadOnly("the mount is read-only"));
    }
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
      // The data, through the handle when there is one.
      Result<FileData> data = fh != nullptr ? Result<FileData>(fh->data) : OpenFileData(fs, ino);
      if (!data) return Refuse("truncate", Describe(fs, ino), data.error());
      Dataset* ds = data->slab();
      if (want == info->size_bytes) {
        // Nothing to do.
      } else if (ds == nullptr) {
        // A writable store's dataset: whole rows of its first dimension.
        Status s = TruncateInStore(fs, *data, want);
        if (!s.ok()) return Refuse("truncate", Describe(fs, ino), s);
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
                      Status::InvalidArgument(fmt::format("size {} requested, the dataset has a fixed size of {} bytes "
                                                          "(0 resets it to the fill value)",
                                                          want, info->size_bytes)));
      }
      fs.inodes.ForgetAppendEnd(ino);
      if (want != info->size_bytes) {
        // Committed at close like a write; a truncate(2) by path at once.
        if (fh != nullptr)
          fh->written.store(true, std::memory_order_relaxed);
        else
          CommitChange(fs, "truncate", Describe(fs, ino));
        fs.inodes.Touch(ino);
        info = InfoOf(*data);
      }
    }
    if (to_set & FUSE_SET_ATTR_MTIME_NOW)
      fs.inodes.Touch(ino);
    else if (to_set & FUSE_SET_ATTR_MTIME)
      fs.inodes.SetMTime(ino, attr->st_mtim);
    struct stat st = StatFor(fs, *info);
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

}  // namespace slabfs::fusefs
