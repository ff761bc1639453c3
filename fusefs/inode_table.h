// What this mount knows of an inode beyond what the container stores:
// when it last changed through the mount, how many file handles have it
// open (and, while any do, its Dataset), and the partial row an appending
// writer left (append ends). Memory only: it lives as long as the mount.
//
// Not a table of the kernel's lookups: inode numbers are object ids, never
// reused, so forget needs nothing here. An entry is made at an object's
// first change or open through the mount and kept.
//
// Partial rows. A write past the end of a dataset whose first dimension
// can grow adds whole rows; when it ends inside the last row, the rest of
// that row is the fill value. Until the row is complete or the handle that
// wrote it is closed, the size reported (ReportedSize) is the end of the
// written bytes, not of the row, so that an O_APPEND writer's next write
// continues where the last one ended instead of after the fill.
//
// Thread-safe. The lock is a leaf: nothing else is locked, no engine call
// is made and no Dataset is released while it is held (the last handle's
// Dataset is let go after it, see DropOpenFile). This is checked, not only
// written here: the notes can be reached only through a Locked, which holds
// the lock for its lifetime (the compiler refuses any other access), and
// wherever the expensive checks are on (engine/util/expensive_checks.h:
// sanitizer builds, and ctest's runs) it aborts when a
// thread takes an inode table's lock while it holds one, or when the count
// of partial rows drifts from the notes.
#ifndef SLABFS_FUSEFS_INODE_TABLE_H_
#define SLABFS_FUSEFS_INODE_TABLE_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "slabfs/container.h"

namespace slabfs::fusefs {

class InodeTable {
 public:
  // default_mtime: the time reported for an object not changed through
  // this mount (the container file's mtime when mounted).
  explicit InodeTable(timespec default_mtime) : default_mtime_(default_mtime) {}
  InodeTable(const InodeTable&) = delete;
  InodeTable& operator=(const InodeTable&) = delete;

  // ---- modification times
  // The time reported for an object: its last change through this mount,
  // else default_mtime.
  timespec MTime(ObjectId id);
  void Touch(ObjectId id);                 // changed now (CLOCK_REALTIME)
  void SetMTime(ObjectId id, timespec t);  // utimensat

  // ---- open files
  // A handle of ds was opened. The first keeps ds, so that requests by
  // inode alone (the fstat of a file removed while open, fallocate and
  // lseek without a handle) still reach a dataset removed while open.
  void AddOpenFile(const Dataset& ds);
  // A handle of a foreign store's dataset `id` was opened (counted for its
  // partial rows; the store keeps the dataset itself).
  void AddOpenFile(ObjectId id);
  // A handle of id was closed (or its open failed). The last lets go of the
  // dataset, after the lock, so that a removed dataset's space can be
  // reclaimed, and ends any partial row (it stays padded with fill; the
  // next open appends after it).
  void DropOpenFile(ObjectId id);
  // The dataset of an open file with this id, if any.
  std::optional<Dataset> OpenFileDataset(ObjectId id);
  // How many handles of this mount have the file open.
  int OpenHandles(ObjectId id);

  // ---- partial rows
  // The st_size to report for a dataset of size_bytes: the end of a
  // partial row inside it, else size_bytes.
  uint64_t ReportedSize(ObjectId id, uint64_t size_bytes);
  // After a write through the handle `owner` of [.., end) that found the
  // dataset at old_size bytes and left it at new_size: a write past what
  // was reported that ends before new_size leaves a partial row owned by
  // `owner`; one that reaches new_size completes it. Writes come through
  // open handles (AddOpenFile), so the id has a note; one without is left
  // alone.
  void NoteWriteEnd(ObjectId id, const void* owner, uint64_t end, uint64_t old_size, uint64_t new_size);
  // The dataset's size was set (truncate, O_TRUNC, fallocate): no partial row.
  void ForgetAppendEnd(ObjectId id);
  // Closing the owner's handle ends its partial row; true if it had one
  // (the kernel's cached size is then stale).
  bool EndAppend(ObjectId id, const void* owner);
  // How many objects have a partial row now.
  int partial_rows() const { return partial_rows_.load(std::memory_order_relaxed); }

 private:
  class Locked;

  struct Note {
    timespec mtime{};  // tv_sec 0: never changed through this mount
    int open_handles = 0;
    Dataset open_dataset;     // while open_handles > 0
    uint64_t append_end = 0;  // 0: no partial row
    const void* append_owner = nullptr;
  };

  // The notes and the lock that guards them. Only a Locked reaches them.
  class Notes {
    friend class Locked;
    std::mutex mu;
    std::unordered_map<ObjectId, Note> by_id;
  };

  // The notes with the lock held, for as long as it lives.
  class Locked {
   public:
    explicit Locked(InodeTable& table);
    ~Locked();
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

    Note* Find(ObjectId id);  // null when there is none
    Note& Get(ObjectId id);   // made when there is none
    // Sets a note's partial row (0: none), keeping partial_rows_ counted.
    void SetAppendEnd(Note& note, uint64_t end, const void* owner);

   private:
    InodeTable& table_;
    std::lock_guard<std::mutex> lock_;
  };

  const timespec default_mtime_;
  Notes notes_;
  // Notes with a partial row (append_end != 0), changed only under the
  // lock: while there are none, writes and stats skip the lock.
  std::atomic<int> partial_rows_{0};
};

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_INODE_TABLE_H_
