// ContainerImpl::RebuildFreeList: the free list is derivable. Every byte of
// the data area is either referenced by the committed state (object blocks,
// index blocks, chunks, the free-list block itself) or free, so a free-list
// block that cannot be read (a flipped bit) is rebuilt from what the tree
// reaches instead of locking out every intact dataset. The rebuilt extents
// carry the generation of the state they were derived from, so that a
// reader of an older commit (whose blocks the damaged list may have held
// back) keeps them until it lets go, as for any freed extent.
#include <algorithm>
#include <ctime>

#include "engine/container_impl.h"
#include "engine/format/layout.h"
#include "engine/util/log.h"

namespace slabfs::engine {

Status DatasetState::CollectExtents(std::vector<Extent>* out) {
  ReaderLock lock(rw_);
  std::vector<BlockRef> blocks;
  SLABFS_RETURN_IF_ERROR(index_->CollectBlocks(&blocks));
  for (const BlockRef& b : blocks) out->push_back({b.addr, b.len});
  return index_->ForEach([&](ChunkCoord c, const ChunkRecord& rec) REQUIRES_SHARED(rw_) {
    out->push_back({rec.addr, FileBytesOf(c, rec)});
    return Status::OK();
  });
}

Result<std::vector<FreedExtent>> ContainerImpl::RebuildFreeList(const Superblock& sb, const NodeMap& nodes,
                                                                const std::vector<BlockRef>& list_blocks) {
  std::vector<Extent> used;
  for (const BlockRef& b : list_blocks) used.push_back({b.addr, b.len});
  for (const auto& [id, n] : nodes) {
    if (!n->block.empty()) used.push_back({n->block.addr, n->block.len});
    std::vector<BlockRef> pages;
    n->pages.AppendBlocks(&pages);
    for (const BlockRef& b : pages) used.push_back({b.addr, b.len});
    if (n->ds) SLABFS_RETURN_IF_ERROR_R(n->ds->CollectExtents(&used));
  }
  std::sort(used.begin(), used.end(), [](const Extent& a, const Extent& b) { return a.addr < b.addr; });
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  std::vector<FreedExtent> free;
  uint64_t at = kDataStart;  // everything below is covered
  for (const Extent& e : used) {
    if (e.len == 0) continue;
    if (e.addr < kDataStart || e.addr > sb.file_end || sb.file_end - e.addr < e.len) {
      return Err(Status::Corruption(path() + ": an extent of " + std::to_string(e.len) + " bytes at " +
                                    std::to_string(e.addr) + " lies outside the container"));
    }
    if (e.addr > at) free.push_back({at, e.addr - at, sb.generation, now});
    at = std::max(at, e.addr + e.len);
  }
  if (sb.file_end > at) free.push_back({at, sb.file_end - at, sb.generation, now});
  return free;
}

}  // namespace slabfs::engine
