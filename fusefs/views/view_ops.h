// The FUSE side of views (view_name.h): lookup of a view's name, and the
// operations on view inodes, which Operations() routes here (Route) so that
// the dataset handlers never see a view.
//
// A view's size and selection are resolved against its dataset's shape at
// each lookup, getattr and open (a view of a growing dataset follows it);
// the kernel does not cache its names or attributes. Raw slices are 0644
// on a read-write mount: a write is a hyperslab write of the elements it
// covers, committed at close like any write; a write past the view's end
// is EFBIG and writes nothing. The .npy, .txt and .png views are 0444 and
// refuse writes (EACCES at open). A .png view is encoded at its first
// lookup, getattr or open after a change (png_view.h), so that its size is
// exact from the first stat; an open file reads the picture it opened.
#ifndef SLABFS_FUSEFS_VIEWS_VIEW_OPS_H_
#define SLABFS_FUSEFS_VIEWS_VIEW_OPS_H_

#include "fusefs/filesystem.h"

namespace slabfs::fusefs::views {

// Lookup of `name` in `parent` that found no child: if the name is a view
// of a dataset in `parent`, replies (the entry, or EINVAL for a slice that
// does not fit the dataset) and returns true; else replies nothing and
// returns false.
bool LookupView(fuse_req_t req, fuse_ino_t parent, const char* name);

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi);
void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi);
void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void FSync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags);
void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name);
void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info* fi);
void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi);

// Operations() installs Route<Normal, View>::Call for the operations above:
// view inodes go to View, every other inode to Normal.
template <auto Normal, auto View>
struct Route;
template <typename... A, void (*Normal)(fuse_req_t, fuse_ino_t, A...), void (*View)(fuse_req_t, fuse_ino_t, A...)>
struct Route<Normal, View> {
  static void Call(fuse_req_t req, fuse_ino_t ino, A... a) {
    if (IsViewIno(ino))
      View(req, ino, a...);
    else
      Normal(req, ino, a...);
  }
};

// forget_multi: the views' references dropped here, the rest passed on.
void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets,
                 void (*normal)(fuse_req_t, size_t, fuse_forget_data*));

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_VIEW_OPS_H_
