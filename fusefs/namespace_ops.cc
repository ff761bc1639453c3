#include "fusefs/namespace_ops.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fusefs/attr_ops.h"
#include "fusefs/layout_edit.h"
#include "fusefs/layout_ops.h"
#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/store_changes.h"

namespace slabfs::fusefs {
namespace {

constexpr std::string_view kTooLong = "names are at most 255 bytes";

// A new file is a 1-D u1 dataset whose length can change: any bytes fit,
// and it can be given a layout later (user.slab.*, or the layout of the
// dataset it replaces).
DatasetOptions NewFileOptions() { return DatasetOptions{.dtype = DType::kU1, .shape = {0}, .max_shape = {kUnlimited}}; }

// Creates the new file parent/name and notes it as new.
Result<Dataset> CreateNewFile(Filesystem& fs, fuse_ino_t parent, const char* name) {
  SLABFS_ASSIGN_OR_RETURN(Dataset ds, fs.container->CreateDataset(parent, name, NewFileOptions()));
  fs.layouts.NoteCreated(parent, name, ds.id());
  fs.inodes.Touch(parent);
  fs.inodes.Touch(ds.id());
  return ds;
}

ObjectInfo InfoOfNew(const Dataset& ds) {
  ObjectInfo info;
  info.id = ds.id();
  info.kind = ObjectKind::kDataset;
  info.size_bytes = ds.size_bytes();
  return info;
}

// Removes parent/name after checking that it is of the kind the call
// expects; the kernel checks too, from its cached view. A dataset that is
// not a new file leaves its layout behind for a file created at its name
// (tar x, mv across filesystems: unlink, then create).
int RemoveChild(fuse_req_t req, std::string_view op, fuse_ino_t parent, const char* name, ObjectKind expected) {
  Filesystem& fs = Fs(req);
  if (NameTooLong(name)) return RefuseErrno(op, DescribeChild(fs, parent, name), ENAMETOOLONG, kTooLong);
  auto id = fs.container->Lookup(parent, name);
  if (!id) return Refuse(op, DescribeChild(fs, parent, name), id.error());
  auto info = fs.container->Stat(*id);
  if (!info) return Refuse(op, DescribeChild(fs, parent, name), info.error());
  if (info->kind != expected) {
    Status s =
        expected == ObjectKind::kGroup ? Status::NotAGroup("it is a dataset") : Status::NotADataset("it is a group");
    return Refuse(op, DescribeChild(fs, parent, name), s);
  }
  std::optional<KeptLayout> kept;
  if (info->kind == ObjectKind::kDataset && !fs.layouts.IsUntypedNew(*id)) {
    auto ds = fs.container->OpenDataset(*id);
    if (ds) {
      auto k = CaptureLayout(*fs.container, *id, *ds);
      if (k) kept = std::move(*k);
    }
  }
  Status s = fs.container->Remove(parent, name);
  if (!s.ok()) return Refuse(op, DescribeChild(fs, parent, name), s);
  if (kept) fs.layouts.Remember(parent, name, std::move(*kept));
  fs.layouts.Forget(*id);
  fs.attr_types.Forget(*id);
  fs.inodes.Touch(parent);
  CommitChange(fs, op, DescribeChild(fs, parent, name));
  fuse_reply_err(req, 0);
  return 0;
}

int RefuseLink(fuse_req_t req, std::string_view op, fuse_ino_t parent, const char* name) {
  return Refuse(op, DescribeChild(Fs(req), parent, name),
                Status::PermissionDenied("a container holds only groups and datasets: no links"));
}

}  // namespace

void MkNod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t /*rdev*/) {
  Guard(req, "mknod", [&] {
    Filesystem& fs = Fs(req);
    if (NameTooLong(name)) return RefuseErrno("mknod", DescribeChild(fs, parent, name), ENAMETOOLONG, kTooLong);
    if (!S_ISREG(mode)) {
      return Refuse(
          "mknod", DescribeChild(fs, parent, name),
          Status::PermissionDenied("a container holds only regular files (datasets) and directories (groups)"));
    }
    auto ds = CreateNewFile(fs, parent, name);
    if (!ds) return Refuse("mknod", DescribeChild(fs, parent, name), ds.error());
    fs.layouts.Closed(ds->id());  // created without an open handle
    CommitChange(fs, "mknod", DescribeChild(fs, parent, name));
    fuse_entry_param e = EntryFor(fs, InfoOfNew(*ds));
    fuse_reply_entry(req, &e);
    return 0;
  });
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t /*mode*/, fuse_file_info* fi) {
  Guard(req, "create", [&] {
    Filesystem& fs = Fs(req);
    if (NameTooLong(name)) return RefuseErrno("create", DescribeChild(fs, parent, name), ENAMETOOLONG, kTooLong);
    fs.TuneReadaheadOnce();
    auto ds = CreateNewFile(fs, parent, name);
    if (!ds) return Refuse("create", DescribeChild(fs, parent, name), ds.error());
    auto fh = std::make_unique<FileHandle>(FileData(*ds));
    fh->writable = (fi->flags & O_ACCMODE) != O_RDONLY;
    // The close commits the new name even if nothing is written (touch).
    fh->written.store(true, std::memory_order_relaxed);
    fi->keep_cache = 1;
    fi->direct_io = 0;
    fi->fh = reinterpret_cast<uint64_t>(fh.get());
    fs.inodes.AddOpenFile(fh->dataset());
    fuse_entry_param e = EntryFor(fs, InfoOfNew(*ds));
    // -ENOENT: interrupted; the kernel will not release the handle. The
    // file exists, and the periodic commit keeps it.
    if (fuse_reply_create(req, &e, fi) == -ENOENT) {
      fs.inodes.DropOpenFile(ds->id());
      fs.layouts.Closed(ds->id());
      return 0;
    }
    fh.release();
    return 0;
  });
}

void MkDir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t /*mode*/) {
  Guard(req, "mkdir", [&] {
    Filesystem& fs = Fs(req);
    if (NameTooLong(name)) return RefuseErrno("mkdir", DescribeChild(fs, parent, name), ENAMETOOLONG, kTooLong);
    auto id = CreateObjectGroup(fs, parent, name);
    if (!id) return Refuse("mkdir", DescribeChild(fs, parent, name), id.error());
    fs.inodes.Touch(parent);
    fs.inodes.Touch(*id);  // made now, not when the mount started
    auto info = fs.store.Stat(*id);
    if (!info) return Refuse("mkdir", DescribeChild(fs, parent, name), info.error());
    CommitChange(fs, "mkdir", DescribeChild(fs, parent, name));
    fuse_entry_param e = EntryFor(fs, *info);
    fuse_reply_entry(req, &e);
    return 0;
  });
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Guard(req, "unlink", [&] { return RemoveChild(req, "unlink", parent, name, ObjectKind::kDataset); });
}

void RmDir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Guard(req, "rmdir", [&] { return RemoveChild(req, "rmdir", parent, name, ObjectKind::kGroup); });
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
            unsigned int flags) {
  Guard(req, "rename", [&] {
    Filesystem& fs = Fs(req);
    if (NameTooLong(name) || NameTooLong(newname)) {
      return RefuseErrno("rename", DescribeChild(fs, parent, name), ENAMETOOLONG, kTooLong);
    }
    auto what = [&] {
      return fmt::format("{} -> {}", DescribeChild(fs, parent, name), DescribeChild(fs, newparent, newname));
    };
    if (flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) {
      return Refuse(
          "rename", what(),
          Status::InvalidArgument(fmt::format("rename flags {:#x}: only RENAME_NOREPLACE is supported", flags)));
    }
    // The kernel holds both directories locked: nothing renames or removes
    // these names between these lookups and the rename.
    auto src = fs.container->Lookup(parent, name);
    if (!src) return Refuse("rename", what(), src.error());
    auto src_info = fs.container->Stat(*src);
    if (!src_info) return Refuse("rename", what(), src_info.error());
    auto dst = fs.container->Lookup(newparent, newname);
    std::optional<KeptLayout> left;
    if (src_info->kind == ObjectKind::kDataset && (flags & RENAME_NOREPLACE) == 0) {
      auto dst_info = dst ? fs.container->Stat(*dst) : Result<ObjectInfo>(Err(dst.error()));
      if (dst_info && dst_info->kind == ObjectKind::kDataset && *dst != *src) {
        // A file replaces a dataset: a new one keeps the dataset's layout.
        if (int err = KeepLayoutOnReplace(fs, *src, *dst, what())) return err;
      } else if (!dst && !fs.layouts.IsUntypedNew(*src)) {
        // A dataset moves away from its name (vim's backup): a file
        // created at that name may take its layout.
        auto ds = fs.container->OpenDataset(*src);
        if (ds) {
          auto k = CaptureLayout(*fs.container, *src, *ds);
          if (k) left = std::move(*k);
        }
      }
    }
    Status s = fs.container->Rename(parent, name, newparent, newname, (flags & RENAME_NOREPLACE) != 0);
    if (!s.ok()) return Refuse("rename", what(), s);
    if (left) fs.layouts.Remember(parent, name, std::move(*left));
    fs.inodes.Touch(parent);
    if (newparent != parent) fs.inodes.Touch(newparent);
    CommitChange(fs, "rename", what());
    fuse_reply_err(req, 0);
    return 0;
  });
}

void Symlink(fuse_req_t req, const char* /*link*/, fuse_ino_t parent, const char* name) {
  Guard(req, "symlink", [&] { return RefuseLink(req, "symlink", parent, name); });
}

void Link(fuse_req_t req, fuse_ino_t /*ino*/, fuse_ino_t newparent, const char* newname) {
  Guard(req, "link", [&] { return RefuseLink(req, "link", newparent, newname); });
}

}  // namespace slabfs::fusefs
