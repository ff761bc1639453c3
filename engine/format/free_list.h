// The free-list block: the extents inside [kDataStart, file_end) that no
// structure of the committed state references.
//
//   payload: u64 count, then count x (u64 addr, u64 len); entries are sorted,
//   do not overlap, and len 0 entries are padding.
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

// Pads with empty entries up to `slots` entries (>= extents.size()).
std::string EncodeFreeList(const std::vector<Extent>& extents, size_t slots);
size_t FreeListPayloadBytes(size_t slots);
// Checks order, overlap and bounds against [kDataStart, file_end).
Result<std::vector<Extent>> DecodeFreeList(std::string_view payload, uint64_t file_end);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_FREE_LIST_H_
