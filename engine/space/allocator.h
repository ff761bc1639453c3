// Free space inside the container file.
//
// Invariant (copy-on-write): an extent that the last committed state
// references is never handed out again until a later commit that no longer
// references it is durable, and no reader still reads a state that does.
// Extents are in one of five states:
//   free     - usable now;
//   fresh    - allocated since the last commit (not in any committed state),
//              so it may be overwritten in place and, when freed, is free at once;
//   pending  - freed since the last commit but referenced by it: held after
//              MarkDurable();
//   held     - unreferenced since the durable commit of generation f, but a
//              read-only open may still read an older state: free once
//              Release() learns that no reader holds a generation that
//              can see it (and a reuse delay, if any, has passed since f
//              was made). An extent first referenced by the commit of
//              generation b (its birth) is seen by the states b .. f-1
//              only; the allocator knows b for the extents it handed out
//              and made durable in this open (up to kMaxBirths of them),
//              and takes 0 for any other, so a reader pinned on an old
//              state keeps only what that state references, however often
//              a writer rewrites newer data;
//   in use   - everything else below file_end.
// Thread-safe.
#ifndef SLABFS_ENGINE_SPACE_ALLOCATOR_H_
#define SLABFS_ENGINE_SPACE_ALLOCATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/format/free_list.h"
#include "engine/util/mutex.h"

namespace slabfs::engine {

class Allocator {
 public:
  // Starts from a committed state: its file end and free list (extents
  // with a freed generation are held until the first Release).
  void Reset(uint64_t file_end, const std::vector<FreedExtent>& free);

  // Best fit among free extents, else the end of the file. `align` is a
  // power of two (ignored when packed). The extent is fresh until
  // MarkDurable().
  uint64_t Allocate(uint64_t len, uint64_t align);
  // Packed: extents are not aligned, so allocations at the end of the file
  // follow each other with no gap (for files written once, like the output
  // of slab repack). Set before the first Allocate.
  void set_packed(bool packed) {
    MutexLock lock(mu_);
    packed_ = packed;
  }
  void Free(uint64_t addr, uint64_t len);
  bool IsFresh(uint64_t addr) const;
  // The fresh extents in address order, if there are at most `max_count`
  // of at most `max_bytes` in all (a single-flush commit's record,
  // format/superblock.h); nullopt otherwise.
  std::optional<std::vector<std::pair<uint64_t, uint64_t>>> FreshExtents(size_t max_count, uint64_t max_bytes) const;

  // Free, held and pending extents: what the next committed state does not
  // reference (written as that state's free list). Pending extents get
  // `generation` (the commit being made) and `now`; free ones generation 0.
  // Neighbours merge when their generation and time agree.
  std::vector<FreedExtent> Unreferenced(uint64_t generation = 0, int64_t now = 0) const;
  // What changed in the set Unreferenced() returns since the last Reset or
  // MarkDurable, in order (a free-list delta, format/free_list.h): ranges
  // allocated (no longer free), extents freed at once, and, last, the
  // pending extents with `generation` and `now`. An extent a Release freed
  // for readers keeps its freed generation on disk (a later open holds it
  // as long as a reader may need it, and no longer), so Release adds nothing.
  std::vector<FreeListChange> Changes(uint64_t generation, int64_t now) const;
  size_t num_changes() const;
  // Drops a free (not pending) extent that ends at file_end, lowering
  // file_end. Returns the new file_end.
  uint64_t TrimTail();
  // The commit of `generation`, made at `now` (Unix seconds), that freed the
  // pending extents is durable: they become held (generation 0: free at
  // once, for a file no reader can share).
  void MarkDurable(uint64_t generation = 0, int64_t now = 0);
  // Frees every held extent that no reader can reach: `seen(born, freed)`
  // says whether a reader holds a generation in [born, freed) (a held
  // extent's birth and the generation whose commit freed it; it is asked
  // once per distinct pair), and the commit that freed it was made at or
  // before `made_by` (Unix seconds: now minus the reuse delay). Returns
  // the bytes freed.
  uint64_t Release(const std::function<bool(uint64_t born, uint64_t freed)>& seen, int64_t made_by);
  // The same where only the oldest generation a reader holds is known
  // (UINT64_MAX: none): an extent freed by a commit of a generation <=
  // `oldest_reader` is free, whatever its birth.
  uint64_t Release(uint64_t oldest_reader, int64_t made_by);

  // The alignments the container asks for. Metadata blocks and chunks that
  // are read whole (variable-size ones, and fixed ones under a page) pack
  // byte to byte: any alignment leaves a free sliver beside nearly every
  // block (at 64 bytes, three per new small file: 296,000 free extents for
  // 99,000 files), which the free list then carries for ever. Fixed-size
  // chunks of a page or more start on a page, for direct partial reads and
  // splice.
  static constexpr uint64_t kPackedAlign = 1;
  static constexpr uint64_t kPageAlign = 4096;

  // Births are remembered for at most this many extents in use; past it,
  // new extents count as born at 0 (kept as long as any older reader).
  static constexpr size_t kMaxBirths = 1u << 20;

  uint64_t file_end() const;
  uint64_t free_bytes() const;  // free + held + pending
  uint64_t held_bytes() const;
  size_t num_free_extents() const;

 private:
  void InsertFreeLocked(uint64_t addr, uint64_t len) REQUIRES(mu_);
  void EraseFreeLocked(std::map<uint64_t, uint64_t>::iterator it) REQUIRES(mu_);

  // Release calls `seen` under it, which asks the kernel for reader locks
  // (engine/util/lock_order.h).
  mutable Mutex mu_{LockRank::kAllocator};
  uint64_t file_end_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, uint64_t> free_ GUARDED_BY(mu_);                // addr -> len, merged
  std::set<std::pair<uint64_t, uint64_t>> by_size_ GUARDED_BY(mu_);  // (len, addr)
  std::unordered_map<uint64_t, uint64_t> fresh_ GUARDED_BY(mu_);     // addr -> len
  // Extents in use that this open allocated: addr -> birth generation.
  std::unordered_map<uint64_t, uint64_t> born_ GUARDED_BY(mu_);
  struct Pending {
    uint64_t addr;
    uint64_t len;
    uint64_t born;
  };
  std::vector<Pending> pending_ GUARDED_BY(mu_);
  // Changes to the free and held extents since the last commit (see
  // Changes()); pending ones are added by Changes().
  std::vector<FreeListChange> journal_ GUARDED_BY(mu_);
  void Journal(uint64_t addr, uint64_t len, bool add) REQUIRES(mu_) {
    if (len != 0) journal_.push_back({addr, len, 0, 0, add});
  }
  std::vector<FreedExtent> held_ GUARDED_BY(mu_);
  uint64_t free_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t pending_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t held_bytes_ GUARDED_BY(mu_) = 0;
  bool packed_ GUARDED_BY(mu_) = false;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_SPACE_ALLOCATOR_H_
