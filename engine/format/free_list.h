// The free-list block: the extents inside [kDataStart, file_end) that no
// structure of the committed state references.
//
//   version 1 payload: u64 count, then count x (u64 addr, u64 len);
//   version 2 payload: u64 count, then count x (u64 addr, u64 len,
//                      u64 freed generation, u64 freed time);
//   entries are sorted, do not overlap, and len 0 entries are padding.
//
// Version 2 says when each extent stopped being referenced: by the commit of
// generation `freed generation` (0: long enough ago that no reader can still
// use it), made at `freed time` (seconds since the Unix epoch). A writer
// reuses an extent only once no reader holds a generation below its freed
// generation (engine/txn/reader_table.h), and, where the filesystem's locks
// may not reach readers on other hosts, once a delay has passed since its
// freed time. Version 1 extents are free for everyone (generation 0).
//
// A commit that changes little writes only what it changed: a free-list
// delta block (type kFreeListDelta, version 1) on top of the previous
// commit's free list, which the superblock then names instead.
//
//   0  u64 previous block's address  \ the free list of the state before:
//   8  u32 previous block's length   / a base (kFreeList) or a delta
//   12 u32 depth: deltas from here down to the base, this one included
//          (1 .. kMaxFreeListDepth; the previous block has depth - 1, and
//          a base 0)
//   16 u64 count, then count x (u64 addr, u64 len, u64 freed generation,
//          u64 freed time, u64 op)
//   op 0: [addr, addr + len) is no longer free (parts of extents it covers
//         are dropped; generation and time are 0);
//   op 1: the extent is unreferenced from this commit on, freed as its
//         generation and time say (it overlaps no extent of the list);
//   len 0 entries are padding.
// A reader applies the deltas oldest first to the base; the result must
// satisfy the base's rules (in bounds, freed generations below the next).
// A writer writes a new base instead once the chain is kMaxFreeListDepth
// deltas deep or its changes outnumber the base's extents
// (engine/txn/free_list_log.h).
#ifndef SLABFS_ENGINE_FORMAT_FREE_LIST_H_
#define SLABFS_ENGINE_FORMAT_FREE_LIST_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/format/block.h"
#include "slabfs/status.h"

namespace slabfs::engine {

struct Extent {
  uint64_t addr = 0;
  uint64_t len = 0;
  bool operator==(const Extent&) const = default;
};

// An unreferenced extent and when it became so.
struct FreedExtent {
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t generation = 0;  // the commit that stopped referencing it; 0: long ago
  int64_t time = 0;         // when that commit was made (Unix seconds); 0: long ago
  // In memory only (never encoded): the generation of the commit that first
  // referenced the extent, when the writer knows it (0: unknown, as old as
  // any state); see Allocator.
  uint64_t born = 0;
  bool operator==(const FreedExtent&) const = default;
};

constexpr uint8_t kFreeListVersion = 2;  // what EncodeFreeList writes

// A version 2 payload, padded with empty entries up to `slots` entries
// (>= extents.size()).
std::string EncodeFreeList(const std::vector<FreedExtent>& extents, size_t slots);
size_t FreeListPayloadBytes(size_t slots);
// Decodes a payload of block version 1 or 2. Checks order, overlap and
// bounds against [kDataStart, file_end); a freed generation must lie below
// `next_generation` (the generation after the state that holds the list).
Result<std::vector<FreedExtent>> DecodeFreeList(std::string_view payload, uint64_t file_end,
                                                uint8_t version = kFreeListVersion,
                                                uint64_t next_generation = UINT64_MAX);

// ---- deltas

constexpr uint32_t kMaxFreeListDepth = 64;

// One change a commit made to the free list (a delta's entry).
struct FreeListChange {
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t generation = 0;  // op add only
  int64_t time = 0;         // op add only
  bool add = false;         // false: the range is no longer free
  bool operator==(const FreeListChange&) const = default;
};

struct FreeListDelta {
  BlockRef prev;
  uint32_t depth = 1;
  std::vector<FreeListChange> changes;
};

// A payload padded with empty entries up to `slots` (>= changes.size()).
std::string EncodeFreeListDelta(const FreeListDelta& d, size_t slots);
size_t FreeListDeltaPayloadBytes(size_t slots);
// Checks the count, each entry's op and freed generation (against
// `next_generation`), and the previous block's reference against file_end;
// padding is dropped. Entries are checked against file_end only once the
// chain is applied (FreeExtentSet::CheckBounds): a later commit may have cut
// the file below an extent added here.
Result<FreeListDelta> DecodeFreeListDelta(std::string_view payload, uint64_t file_end,
                                          uint64_t next_generation = UINT64_MAX);

// The free list a base and its deltas describe, built by applying them in
// order.
class FreeExtentSet {
 public:
  explicit FreeExtentSet(const std::vector<FreedExtent>& base);
  // Corruption for an added extent that overlaps one already in the set.
  Status Apply(const FreeListChange& c);
  // Sorted by address; neighbours with the same generation and time merged.
  std::vector<FreedExtent> Extents() const;
  // Corruption unless every extent lies inside [kDataStart, file_end).
  Status CheckBounds(uint64_t file_end) const;

 private:
  std::map<uint64_t, FreedExtent> by_addr_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_FREE_LIST_H_
