// Keeping a dataset's layout when a tool replaces its file.
//
// Tools replace files in a few ways, and each would turn a typed dataset
// into the untyped byte stream that a new file is (1-D u1, growable):
//   - write a new file and rename it over the old one (rsync, sed -i,
//     Python's tempfile + os.replace, git's lock files);
//   - move the old file away, write a new one, remove the old (vim);
//   - remove the old file and create a new one (tar x without --overwrite,
//     mv across filesystems, fio).
// The mount keeps the layout in each case when the new bytes fit it (the
// same size, or whole rows of a dataset whose first dimension can grow):
// the new file takes the old dataset's dtype, shape, chunks, filters, fill,
// sparseness and attributes (Dataset::Relayout, then the attributes the new
// file does not have). Where they do not fit, POSIX wins and a line is
// logged.
//
// LayoutKeeper is the memory this takes: which files this mount created
// (new files, still untyped), and the layouts of datasets that recently
// left a name (removed or renamed away), for a file created at that name.
// Memory only: it lives as long as the mount. Thread-safe; its mutex is a
// leaf (no engine call is made under it).
#ifndef SLABFS_FUSEFS_LAYOUT_KEEPER_H_
#define SLABFS_FUSEFS_LAYOUT_KEEPER_H_

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fusefs/layout_edit.h"
#include "slabfs/container.h"

namespace slabfs::fusefs {

// A dataset's layout and attributes, as they were.
struct KeptLayout {
  DatasetInfo info;
  std::vector<std::pair<std::string, Attribute>> attrs;
  std::string path;  // where it was, for log lines
};

// The layout and attributes of dataset `id`.
Result<KeptLayout> CaptureLayout(Container& c, ObjectId id, const Dataset& ds);

// Gives `ds` the layout `kept` if its bytes fit (FitLayout), together with
// every attribute of `kept` that `ds` does not have. true: done; false:
// they do not fit and nothing changed. Errors come from the relayout (a
// full disk, a damaged chunk): nothing changed then either.
Result<bool> AdoptLayout(Container& c, Dataset& ds, const KeptLayout& kept);

class LayoutKeeper {
 public:
  using Clock = std::chrono::steady_clock;
  // How long a layout is kept for a name, and a created file counts as new
  // after its last close.
  explicit LayoutKeeper(Clock::duration window = std::chrono::seconds(60)) : window_(window) {}

  // Dataset `kept` (not a new file) left parent/name.
  void Remember(ObjectId parent, std::string_view name, KeptLayout kept);
  // This mount created file `id` at parent/name. It is new; a layout
  // remembered at that name within the window becomes its pending layout.
  void NoteCreated(ObjectId parent, std::string_view name, ObjectId id);
  // Existing dataset `id` was emptied by an O_TRUNC open (cp, cp -a, tar
  // x --overwrite): it is written in place with its own layout, but counts
  // as new, and typed, so that user.slab.* fields a copy sets afterwards
  // (cp -a of a typed dataset) give it the copied layout where its bytes
  // fit, as they would a file created at its name. Nothing changes for a
  // file that is new already.
  void NoteTruncated(ObjectId id);
  // Whether fields given to `id` apply only to a layout that holds exactly
  // its bytes (a dataset emptied by O_TRUNC), never by fitting whole rows:
  // a fixed dataset keeps its size through O_TRUNC, and a growable one
  // pads a write to whole rows of its own layout, so the rows a fit would
  // find include bytes the copy never wrote.
  bool NeedsExactFit(ObjectId id);
  // Whether `id` is a new file (created by this mount, not yet typed).
  bool IsNew(ObjectId id);
  // New file `id` took a layout from user.slab.* fields given to it (cp -a,
  // mv from another disk, rsync -X): it stays new for more fields, but its
  // layout is a dataset's, kept like one when it leaves its name.
  void MarkTyped(ObjectId id);
  // Whether `id` is a new file still untyped: a byte stream whose layout
  // is not worth keeping for its name when it is removed or moved away.
  bool IsUntypedNew(ObjectId id);
  // `id` is typed now (adopted a layout, or was given one): no longer new.
  void Settle(ObjectId id);
  // `id` was removed.
  void Forget(ObjectId id);
  // A handle of file `id` was opened or closed (created files start with
  // one open). A new file stays new while it is open and for the window
  // after its last close.
  void Opened(ObjectId id);
  void Closed(ObjectId id);

  // The layout new file `id` waits to take at its last close, taken.
  std::optional<KeptLayout> TakePending(ObjectId id);
  // Gives a taken layout back to wait for a later close (the file was
  // closed before anything was written to it).
  void KeepPending(ObjectId id, KeptLayout kept);
  // The user.slab.* fields given to new file `id` and not applied yet
  // (its bytes did not fit them yet); empty when none.
  LayoutEdit Staged(ObjectId id);
  void SetStaged(ObjectId id, LayoutEdit edit);
  // Whether new file `id` has a pending layout or staged fields.
  bool HasWork(ObjectId id);
  // New file `id` took a layout from its staged fields while it held no
  // data (tar --xattrs sets them before it writes): once it holds data,
  // its layout is fixed like any dataset's.
  void MarkTypedWhileEmpty(ObjectId id);
  bool TypedWhileEmpty(ObjectId id);

 private:
  struct NewFile {
    int open = 1;
    Clock::time_point last_used;
    std::optional<KeptLayout> pending;
    LayoutEdit staged;
    bool typed_empty = false;
    bool typed = false;
    bool exact = false;  // NeedsExactFit
  };
  struct Left {
    Clock::time_point when;
    KeptLayout kept;
  };
  // Drops what is older than the window; at most every few seconds.
  void PruneLocked(Clock::time_point now);
  // Whether `id` is new (open, or closed within the window), and untyped
  // if `untyped_only`; mu_ held.
  bool NewLocked(ObjectId id, bool untyped_only);

  const Clock::duration window_;
  std::mutex mu_;  // a leaf: guards everything below
  std::map<std::pair<ObjectId, std::string>, Left> left_;
  std::unordered_map<ObjectId, NewFile> new_files_;
  Clock::time_point last_prune_{};
};

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_LAYOUT_KEEPER_H_
