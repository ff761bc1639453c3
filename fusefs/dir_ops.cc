#include "fusefs/dir_ops.h"

#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <utility>

#include "fusefs/attr_ops.h"
#include "fusefs/request.h"
#include "fusefs/views/view_name.h"
#include "fusefs/views/view_ops.h"

namespace slabfs::fusefs {

namespace {

// Whether the kernel may keep a missing name as a negative entry for
// entry_timeout, so that the lstat before a create (tar, git, cp) and the
// create's own lookup reach the daemon once, not twice. Only where every
// change of the namespace goes through this mount, whose create, mkdir,
// rename and symlink replace the kernel's negative entry: a container,
// mounted read-write (this daemon holds its write lock) or read-only on
// one commit. Not a follow mount (new names arrive with a refresh), nor a
// Zarr or HDF5 store (other programs may change the directory or file),
// nor a name of a view's form ("x.npy", "x[0:2]"), which appears when a
// dataset of another name does.
bool CachesMissingName(const Filesystem& fs, const char* name) {
  return fs.container != nullptr && fs.options.follow_interval.count() == 0 && fs.options.entry_timeout > 0 &&
         !views::ParseViewName(name).has_value();
}

}  // namespace

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Guard(req, "lookup", [&] {
    Filesystem& fs = Fs(req);
    if (NameTooLong(name)) {
      return RefuseErrno("lookup", DescribeChild(fs, parent, name), ENAMETOOLONG, "names are at most 255 bytes");
    }
    auto id = fs.store.Lookup(parent, name);
    if (!id) {
      // A missing name is an ordinary answer (shells and Python probe all
      // the time).
      if (id.error().code() == Code::kNotFound) {
        // Not a child: perhaps a view of one (views/view_ops.h).
        if (views::LookupView(req, parent, name)) return 0;
        const int err = QuietRefuse(
            "lookup", [&] { return DescribeChild(fs, parent, name); }, id.error());
        if (!CachesMissingName(fs, name)) return err;
        fuse_entry_param e{};  // inode 0: a negative entry
        e.entry_timeout = fs.options.entry_timeout;
        fuse_reply_entry(req, &e);
        return 0;
      }
      return Refuse("lookup", DescribeChild(fs, parent, name), id.error());
    }
    auto info = fs.store.Stat(*id);
    if (!info) return Refuse("lookup", DescribeChild(fs, parent, name), info.error());
    fuse_entry_param e = EntryFor(fs, *info);
    fuse_reply_entry(req, &e);
    return 0;
  });
}

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "opendir", [&] {
    Filesystem& fs = Fs(req);
    auto entries = fs.store.List(ino);
    if (!entries) return Refuse("opendir", Describe(fs, ino), entries.error());
    auto dh = std::make_unique<DirHandle>();
    dh->entries = std::move(*entries);
    fi->fh = reinterpret_cast<uint64_t>(dh.get());
    if (fuse_reply_open(req, fi) != -ENOENT) dh.release();
    return 0;
  });
}

namespace {

// Fills buf with the entries from offset `off` on and returns the bytes
// used. Offsets: 0 is ".", 1 is "..", 2 + i is entries[i]; each entry
// carries the offset of the next.
Result<size_t> FillDir(fuse_req_t req, Filesystem& fs, fuse_ino_t ino, DirHandle* dh, char* buf, size_t size, off_t off,
                       bool plus) {
  std::lock_guard lock(dh->mu);
  if (off == 0 && dh->read_once) {  // rewinddir: show changes since opendir
    SLABFS_ASSIGN_OR_RETURN(dh->entries, fs.store.List(ino));
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
        auto info = fs.store.Stat(entry.id);
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

int ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi, bool plus) {
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

}  // namespace

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

}  // namespace slabfs::fusefs
