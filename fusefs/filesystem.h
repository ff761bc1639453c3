// The FUSE low-level filesystem over one open store: a slab Container
// (read-write or read-only), or a foreign store through the store
// interface (include/slabfs/store.h): an HDF5 / netCDF-4 file (read-only)
// or a Zarr directory store (read-write unless mounted ro, through its
// StoreWriter: store_changes.h).
//
// Everything that only reads (lookup, getattr, readdir, read, lseek,
// getxattr, listxattr, the views) asks `store` and reads a dataset through
// a FileData (file_data.h), so it is written once for every store; what
// changes the tree or a dataset asks `container` on a slab mount and
// `writer` on a writable foreign store's (store_changes.h); a mount with
// neither is read-only (the kernel refuses its writes, and the handlers
// refuse them too).
//
// Inode numbers are slabfs object ids (kRootId == FUSE_ROOT_ID == 1); ids
// are never reused, so the kernel's lookup counts need no table here and
// forget is a no-op. Each handler decodes its arguments, calls the public
// API, maps a failure through the errno table (logging one line that names
// the operation, the object and the reason) and replies exactly once; no
// exception leaves a handler.
//
// Open files carry a FileHandle in fuse_file_info::fh (the Dataset handle,
// so reads and writes skip the lookup by id); open directories carry a
// DirHandle (a snapshot of the listing, so readdir offsets are stable).
//
// The handlers live by concept, and Operations() wires them up in one
// place (filesystem.cc, with init, destroy, forget and statfs): file_ops.h
// (open, read, write, flush, release, fsync), dir_ops.h (lookup and
// listings), attr_ops.h (getattr, setattr), namespace_ops.h (changes of
// names), xattr_ops.h, sparse_ops.h (fallocate, lseek) and, for the
// inodes of views, views/view_ops.h.
#ifndef SLABFS_FUSEFS_FILESYSTEM_H_
#define SLABFS_FUSEFS_FILESYSTEM_H_

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "fusefs/attr_types.h"
#include "fusefs/committer.h"
#include "fusefs/file_attr.h"
#include "fusefs/file_data.h"
#include "fusefs/inode_table.h"
#include "fusefs/invalidator.h"
#include "fusefs/layout_keeper.h"
#include "fusefs/views/png_view.h"
#include "fusefs/views/view_table.h"
#include "slabfs/container.h"
#include "slabfs/store.h"
#include "slabfs/store_writer.h"

namespace slabfs::fusefs {

struct FsOptions {
  bool read_only = false;
  std::chrono::milliseconds commit_interval{5000};  // zero: no periodic commit
  // Read-only: how often to move to the newest commit (follower.h); zero:
  // never (the mount reads the commit it started with).
  std::chrono::milliseconds follow_interval{0};
  uid_t uid = 0;  // owner reported for every object
  gid_t gid = 0;
  double attr_timeout = 1.0;           // seconds the kernel may cache attributes
  double entry_timeout = 1.0;          // and names
  std::string mountpoint;              // for tuning the mount's readahead
  uint64_t readahead_bytes = 1 << 20;  // 0: leave the kernel's default
  bool splice_reads = true;            // may answer reads by splicing (splice_reply.h)
  // -o bulk: the last close of a written file and namespace and attribute
  // changes return without a commit; fsync, fsyncdir, the commit timer and
  // unmount commit as always (and a daemon killed loses what was not).
  bool bulk = false;
};

// The state every handler reaches through fuse_req_userdata().
struct Filesystem {
  // c: the container of a slab mount (the store is a ContainerStore over
  // it), null for a foreign store's mount. w: a foreign store's writer
  // when it is mounted read-write (null otherwise, and on a slab mount).
  Filesystem(Container* c, const Store& s, const FsOptions& o, StoreWriter* w = nullptr);

  // Raises the mount's readahead window (see readahead.h), once. Called by
  // open: the INIT reply resets the window, and a file takes its window
  // when it is opened.
  void TuneReadaheadOnce();

  Container* const container;       // open for the life of the session; null for a foreign store
  const Store& store;               // the tree every read goes through
  StoreWriter* const writer;        // a writable foreign store's changes, or null
  fuse_session* session = nullptr;  // set by the daemon, for notifications
  const FsOptions options;
  const StatContext stat_ctx;
  // Modification times, open handles and partial rows (inode_table.h).
  InodeTable inodes;
  Committer committer;  // started by init, stopped by destroy
  // -o ro,follow: the refresh thread (follower.h); started by init,
  // stopped by destroy.
  Committer follower;
  // Drops ranges of the kernel's page cache (fallocate); started by init,
  // stopped by destroy.
  Invalidator invalidator;
  Status final_commit;  // the commit made by destroy, for the exit status
  // New files and the layouts they may keep (see layout_keeper.h).
  LayoutKeeper layouts;
  // Attribute types that wait for their attribute's value (attr_types.h).
  AttrTypeKeeper attr_types;
  // The inodes of slice and typed views (views/view_name.h).
  views::ViewTable views;
  // Encoded .png views (views/png_view.h).
  views::PngCache pictures;
  std::once_flag readahead_once;
  // Reads of plain file runs are answered by splicing them (set by init,
  // before any read; splice_reply.h).
  bool splice_replies = false;
};

enum class HandleKind : unsigned char { kFile, kDir, kView };

// What fuse_file_info::fh points to. The kind lets a handler check that
// the kernel handed it the handle type it expects.
struct Handle {
  explicit Handle(HandleKind k) : kind(k) {}
  virtual ~Handle() = default;
  const HandleKind kind;
};

struct FileHandle : Handle {
  explicit FileHandle(FileData d) : Handle(HandleKind::kFile), data(std::move(d)) {}
  FileData data;  // thread-safe; reads and writes use it concurrently
  // The slab dataset, for writes on a slab mount (a writable foreign
  // store's dataset is data.store_writable()).
  Dataset& dataset() { return *data.slab(); }
  // Set by every write (and truncate) through this handle, taken by the
  // commit at a flush or release, put back if that commit fails.
  std::atomic<bool> written{false};
  // Held by a flush or release while it takes `written` and commits, so
  // that a close of one descriptor of a shared handle (dup, fork) returns
  // only after a commit that another close of it started is done. Lock
  // order: commit_mu, then the engine's locks and the inode table's.
  std::mutex commit_mu;
  // Opened for writing: lost writes are reported to this handle's flush
  // and fsync (flush requests carry no open flags).
  bool writable = false;
  // Reads and writes end their use of the handle with DoneWith (a release
  // increment), and Release reads `uses` with acquire before it deletes
  // the handle. The kernel sends RELEASE only after every request of the
  // file was answered, an order through /dev/fuse that ThreadSanitizer
  // cannot see; this makes it visible (one atomic add a request). Nothing
  // of the handle is touched after DoneWith.
  std::atomic<uint64_t> uses{0};
  void DoneWith() { uses.fetch_add(1, std::memory_order_release); }
};

struct DirHandle : Handle {
  DirHandle() : Handle(HandleKind::kDir) {}
  // Guards the fields below. Lock order: DirHandle::mu, then the engine's
  // own locks (readdir lists and stats while holding it) and the inode
  // table's; nothing takes mu while holding those.
  std::mutex mu;
  std::vector<Entry> entries;  // the listing, sorted by name
  bool read_once = false;      // a readdir from offset 0 after this relists
};

// The data of dataset `id` for the file view: the container's Dataset on a
// slab mount, the store's dataset on a foreign store's. NotFound,
// NotADataset as the store says.
Result<FileData> OpenFileData(Filesystem& fs, ObjectId id);

// The container's space figures (statfs, user.slab.space); for a foreign
// store, the file's size as used and the disk's free space as free.
SpaceInfo SpaceOf(Filesystem& fs);

// Commits the container now (on a read-only mount, nothing: OK); on a
// writable foreign store's mount, makes its changes durable
// (StoreWriter::Sync). For fsync, fsyncdir, a close after writes and the
// unmount.
Status Commit(Filesystem& fs);

// Commits a change that the operation has already made (a namespace change,
// an attribute, a truncate by path), so that it is durable when the
// operation returns and an unmount finds nothing left to do. A failure is
// logged, not returned: the change stands, and the periodic commit retries.
// With -o bulk it commits nothing (FsOptions::bulk).
void CommitChange(Filesystem& fs, std::string_view op, std::string_view what);

// Every low-level operation slabfs implements, wired up in one place.
const fuse_lowlevel_ops& Operations();

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_FILESYSTEM_H_
