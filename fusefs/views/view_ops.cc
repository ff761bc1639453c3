#include "fusefs/views/view_ops.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/views/png_view.h"
#include "fusefs/views/view_io.h"
#include "fusefs/views/view_layout.h"

namespace slabfs::fusefs::views {
namespace {

struct ViewHandle : Handle {
  ViewHandle(FileData d, ViewLayout l) : Handle(HandleKind::kView), dataset(std::move(d)), layout(std::move(l)) {}
  FileData dataset;
  ViewLayout layout;  // as resolved at open: reads and writes keep to it
  std::atomic<bool> written{false};
};

ViewHandle* AsView(const fuse_file_info* fi) {
  if (fi == nullptr || fi->fh == 0) return nullptr;
  auto* h = reinterpret_cast<Handle*>(fi->fh);
  return h->kind == HandleKind::kView ? static_cast<ViewHandle*>(h) : nullptr;
}

std::string SuffixOf(ViewKind k) {
  switch (k) {
    case ViewKind::kRaw: return "";
    case ViewKind::kNpy: return ".npy";
    case ViewKind::kText: return ".txt";
    case ViewKind::kPng: return ".png";
  }
  return "";
}

// "/g/ds[0:10].npy" for log lines.
std::string DescribeView(Filesystem& fs, const ViewRef& ref) {
  std::string s = Describe(fs, ref.dataset);
  if (ref.slice) s += "[" + *ref.slice + "]";
  return s + SuffixOf(ref.kind);
}

struct Resolved {
  ViewRef ref;
  FileData dataset;
  ViewLayout layout;
};

// A picture's bytes and size come from encoding it (png_view.h).
Status AttachIfPicture(Filesystem& fs, const FileData& ds, ViewLayout& layout) {
  if (layout.kind != ViewKind::kPng) return Status::OK();
  return AttachPicture(fs.pictures, fs.store, ds, fs.inodes.MTime(ds.id()), layout);
}

// The view behind `ino`, resolved against its dataset now.
Result<Resolved> ResolveIno(Filesystem& fs, fuse_ino_t ino) {
  std::optional<ViewRef> ref = fs.views.Find(ino);
  if (!ref) return Err(Status::NotFound(fmt::format("no view with inode {}", ino)));
  SLABFS_ASSIGN_OR_RETURN(FileData ds, OpenFileData(fs, ref->dataset));
  SLABFS_ASSIGN_OR_RETURN(ViewLayout layout, ResolveView(ref->kind, ref->slice, ds.info()));
  SLABFS_RETURN_IF_ERROR_R(AttachIfPicture(fs, ds, layout));
  return Resolved{*ref, std::move(ds), std::move(layout)};
}

struct stat StatOf(Filesystem& fs, fuse_ino_t ino, const ViewRef& ref, const ViewLayout& v) {
  struct stat st {};
  st.st_ino = ino;
  const bool writable = v.kind == ViewKind::kRaw && !fs.options.read_only;
  st.st_mode = S_IFREG | (writable ? 0644 : 0444);
  st.st_nlink = 1;
  st.st_uid = fs.stat_ctx.uid;
  st.st_gid = fs.stat_ctx.gid;
  st.st_size = static_cast<off_t>(v.size_bytes);
  st.st_blksize = 1 << 20;
  st.st_blocks = static_cast<blkcnt_t>((v.size_bytes + 511) / 512);
  const timespec t = fs.inodes.MTime(ref.dataset);
  st.st_mtim = st.st_ctim = st.st_atim = t;
  return st;
}

}  // namespace

bool LookupView(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Filesystem& fs = Fs(req);
  std::optional<ViewName> vn = ParseViewName(name);
  if (!vn) return false;
  auto id = fs.store.Lookup(parent, vn->dataset);
  if (!id) return false;
  auto ds = OpenFileData(fs, *id);
  if (!ds) return false;  // a group: "g.npy" is just a missing name
  Guard(req, "lookup", [&] {
    auto layout = ResolveView(vn->kind, vn->slice, ds->info());
    if (!layout) return Refuse("lookup", DescribeChild(fs, parent, name), layout.error());
    if (Status s = AttachIfPicture(fs, *ds, *layout); !s.ok()) {
      return Refuse("lookup", DescribeChild(fs, parent, name), s);
    }
    const ViewRef ref{*id, vn->kind, vn->slice};
    fuse_entry_param e{};
    e.ino = fs.views.Lookup(ref);
    e.generation = 1;
    e.attr = StatOf(fs, e.ino, ref, *layout);
    e.attr_timeout = 0;  // a view follows its dataset's shape
    e.entry_timeout = 0;
    fuse_reply_entry(req, &e);
    return 0;
  });
  return true;
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "getattr", [&] {
    Filesystem& fs = Fs(req);
    if (ViewHandle* h = AsView(fi)) {
      auto ref = fs.views.Find(ino);
      if (ref) {
        struct stat st = StatOf(fs, ino, *ref, h->layout);
        fuse_reply_attr(req, &st, 0);
        return 0;
      }
    }
    auto r = ResolveIno(fs, ino);
    if (!r) return Refuse("getattr", fmt::format("view inode {}", ino), r.error());
    struct stat st = StatOf(fs, ino, r->ref, r->layout);
    fuse_reply_attr(req, &st, 0);
    return 0;
  });
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* /*fi*/) {
  Guard(req, "setattr", [&] {
    Filesystem& fs = Fs(req);
    auto r = ResolveIno(fs, ino);
    if (!r) return Refuse("setattr", fmt::format("view inode {}", ino), r.error());
    const std::string what = DescribeView(fs, r->ref);
    struct stat st = StatOf(fs, ino, r->ref, r->layout);
    if ((to_set & FUSE_SET_ATTR_SIZE) && static_cast<uint64_t>(attr->st_size) != r->layout.size_bytes) {
      return Refuse("truncate", what,
                    Status::InvalidArgument("a view has the size of its selection (O_TRUNC and truncate are refused)"));
    }
    if ((to_set & FUSE_SET_ATTR_MODE) && (attr->st_mode & 07777) != (st.st_mode & 07777)) {
      return Refuse("chmod", what, Status::PermissionDenied("the mode of a view is fixed"));
    }
    if (((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != st.st_uid) ||
        ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != st.st_gid)) {
      return Refuse("chown", what, Status::PermissionDenied("the owner is the mounting user"));
    }
    fuse_reply_attr(req, &st, 0);  // times: accepted, not kept
    return 0;
  });
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "open", [&] {
    Filesystem& fs = Fs(req);
    auto r = ResolveIno(fs, ino);
    if (!r) return Refuse("open", fmt::format("view inode {}", ino), r.error());
    const bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
    if (writing && r->layout.kind != ViewKind::kRaw) {
      return RefuseErrno("open", DescribeView(fs, r->ref), EACCES, "the .npy, .txt and .png views are read-only");
    }
    if (writing && (fs.options.read_only || r->dataset.slab() == nullptr)) {
      // A writable foreign store (Zarr) is written through the dataset's
      // own file only.
      Status s = fs.options.read_only || fs.writer == nullptr
                     ? Status::ReadOnly("a read-only mount")
                     : Status::NotSupported(fmt::format("views of a {} store's datasets are read-only: write the "
                                                        "dataset's own file",
                                                        fs.store.format()));
      return Refuse("open", DescribeView(fs, r->ref), s);
    }
    if ((fi->flags & O_TRUNC) && r->layout.size_bytes != 0) {
      return Refuse("open (O_TRUNC)", DescribeView(fs, r->ref),
                    Status::InvalidArgument("a view has the size of its selection; write it with conv=notrunc"));
    }
    auto h = std::make_unique<ViewHandle>(std::move(r->dataset), std::move(r->layout));
    fi->keep_cache = 0;
    fi->direct_io = 0;
    fi->fh = reinterpret_cast<uint64_t>(h.get());
    if (fuse_reply_open(req, fi) != -ENOENT) h.release();
    return 0;
  });
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Guard(req, "read", [&] {
    Filesystem& fs = Fs(req);
    ViewHandle* h = AsView(fi);
    if (h == nullptr) return RefuseErrno("read", fmt::format("view inode {}", ino), EBADF, "no view handle");
    char* buf = ReadBuffer(size);
    auto n = ReadView(h->dataset, h->layout, static_cast<uint64_t>(off), size, buf);
    if (!n) {
      auto ref = fs.views.Find(ino);
      return Refuse("read", fmt::format("{} [{}, +{})", ref ? DescribeView(fs, *ref) : "a view", off, size), n.error());
    }
    fuse_reply_buf(req, buf, *n);
    return 0;
  });
}

void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  Guard(req, "write", [&] {
    Filesystem& fs = Fs(req);
    ViewHandle* h = AsView(fi);
    if (h == nullptr) return RefuseErrno("write", fmt::format("view inode {}", ino), EBADF, "no view handle");
    Dataset* ds = h->dataset.slab();  // views of a foreign store's datasets open read-only
    if (ds == nullptr) return RefuseErrno("write", fmt::format("view inode {}", ino), EBADF, "a read-only view");
    Status s = WriteView(*ds, h->layout, static_cast<uint64_t>(off), size, buf);
    if (!s.ok()) {
      auto ref = fs.views.Find(ino);
      return Refuse("write", fmt::format("{} [{}, +{})", ref ? DescribeView(fs, *ref) : "a view", off, size), s);
    }
    h->written.store(true, std::memory_order_relaxed);
    fs.inodes.Touch(h->dataset.id());
    // The dataset's own file may have these bytes cached: drop its pages
    // (the wait is bounded; see invalidator.h).
    fs.invalidator.Invalidate(h->dataset.id(), 0, 0, std::chrono::milliseconds(100));
    fuse_reply_write(req, size);
    return 0;
  });
}

namespace {

// A close after writes commits them, as for a dataset's file.
int CommitIfWritten(fuse_req_t req, std::string_view op, fuse_ino_t ino, ViewHandle* h) {
  if (h == nullptr || !h->written.exchange(false, std::memory_order_relaxed)) return 0;
  Filesystem& fs = Fs(req);
  Status s = Commit(fs);
  if (!s.ok()) {
    auto ref = fs.views.Find(ino);
    return Refuse(op, ref ? DescribeView(fs, *ref) : "a view", s.WithContext("commit"));
  }
  return 0;
}

}  // namespace

void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "flush", [&] {
    if (int err = CommitIfWritten(req, "flush", ino, AsView(fi))) return err;
    fuse_reply_err(req, 0);
    return 0;
  });
}

void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  std::unique_ptr<ViewHandle> owned(AsView(fi));
  Guard(req, "release", [&] {
    if (int err = CommitIfWritten(req, "release", ino, owned.get())) return err;
    fuse_reply_err(req, 0);
    return 0;
  });
}

void FSync(fuse_req_t req, fuse_ino_t ino, int /*datasync*/, fuse_file_info* /*fi*/) {
  Guard(req, "fsync", [&] {
    Filesystem& fs = Fs(req);
    Status s = Commit(fs);
    if (!s.ok()) return Refuse("fsync", fmt::format("view inode {}", ino), s.WithContext("commit"));
    fuse_reply_err(req, 0);
    return 0;
  });
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Fs(req).views.Forget(ino, nlookup);
  fuse_reply_none(req);
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets,
                 void (*normal)(fuse_req_t, size_t, fuse_forget_data*)) {
  Filesystem& fs = Fs(req);
  for (size_t i = 0; i < count; ++i) {
    if (IsViewIno(forgets[i].ino)) fs.views.Forget(forgets[i].ino, forgets[i].nlookup);
  }
  normal(req, count, forgets);  // replies; it has nothing to do for views
}

void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* /*value*/, size_t /*size*/, int /*flags*/) {
  Guard(req, "setxattr", [&] {
    return RefuseErrno("setxattr", fmt::format("view inode {} ({})", ino, name), ENOTSUP,
                       "a view has no attributes of its own");
  });
}

void GetXattr(fuse_req_t req, fuse_ino_t /*ino*/, const char* /*name*/, size_t /*size*/) {
  fuse_reply_err(req, ENODATA);  // so that ls and cp stay quiet
}

void ListXattr(fuse_req_t req, fuse_ino_t /*ino*/, size_t size) {
  if (size == 0)
    fuse_reply_xattr(req, 0);
  else
    fuse_reply_buf(req, nullptr, 0);
}

void RemoveXattr(fuse_req_t req, fuse_ino_t /*ino*/, const char* /*name*/) { fuse_reply_err(req, ENODATA); }

void Fallocate(fuse_req_t req, fuse_ino_t ino, int /*mode*/, off_t /*offset*/, off_t /*length*/,
               fuse_file_info* /*fi*/) {
  Guard(req, "fallocate",
        [&] { return RefuseErrno("fallocate", fmt::format("view inode {}", ino), EOPNOTSUPP, "not on a view"); });
}

void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi) {
  Guard(req, "lseek", [&] {
    ViewHandle* h = AsView(fi);
    if (h == nullptr) return RefuseErrno("lseek", fmt::format("view inode {}", ino), EBADF, "no view handle");
    const auto size = static_cast<off_t>(h->layout.size_bytes);
    // A view has no holes: all data.
    if (whence == SEEK_DATA) {
      if (off >= size) return ENXIO;
      fuse_reply_lseek(req, off);
      return 0;
    }
    if (whence == SEEK_HOLE) {
      if (off >= size) return ENXIO;
      fuse_reply_lseek(req, size);
      return 0;
    }
    return EINVAL;
  });
}

}  // namespace slabfs::fusefs::views
