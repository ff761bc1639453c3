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
#ifndef SLABFS_ENGINE_FORMAT_FREE_LIST_H_
#define SLABFS_ENGINE_FORMAT_FREE_LIST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_FREE_LIST_H_
