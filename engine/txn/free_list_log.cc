#include "engine/txn/free_list_log.h"

#include <algorithm>
#include <string>

#include "engine/io/file.h"

namespace slabfs::engine {
namespace {

// A base is written again once the deltas hold this many more changes
// than the base has extents (small lists are cheap to rewrite anyway).
constexpr size_t kMinChangesBeforeBase = 1024;

}  // namespace

Result<std::vector<FreedExtent>> ReadFreeListChain(BlockStore& store, const Superblock& sb,
                                                   FreeListChain* chain) {
  *chain = {};
  if (sb.free_list.empty()) return std::vector<FreedExtent>();
  const uint64_t next_generation = sb.generation + 1;
  // From the head down to the base, then applied oldest first.
  std::vector<FreeListDelta> deltas;
  std::vector<BlockRef> refs;
  BlockRef ref = sb.free_list;
  uint32_t expect_depth = 0;  // 0: the head, any depth
  for (;;) {
    for (const BlockRef& seen : refs)
      if (seen.addr == ref.addr) return Err(Status::Corruption("free list: its chain loops"));
    SLABFS_ASSIGN_OR_RETURN(BlockType type, store.TypeOf(ref, "free list"));
    if (type != BlockType::kFreeListDelta) break;
    SLABFS_ASSIGN_OR_RETURN(std::string payload, store.Read(ref, BlockType::kFreeListDelta, "free list"));
    SLABFS_ASSIGN_OR_RETURN(FreeListDelta d, DecodeFreeListDelta(payload, sb.file_end, next_generation));
    if (expect_depth != 0 && d.depth != expect_depth)
      return Err(Status::Corruption("free-list delta: depth " + std::to_string(d.depth) + " where " +
                                    std::to_string(expect_depth) + " was expected"));
    refs.push_back(ref);
    chain->blocks.insert(chain->blocks.begin(), ref);
    ref = d.prev;
    expect_depth = d.depth - 1;
    deltas.push_back(std::move(d));
    if (expect_depth == 0) break;
  }
  if (!deltas.empty() && deltas.back().depth != 1)
    return Err(Status::Corruption("free-list delta: the chain ends before its base"));
  uint8_t version = 0;
  SLABFS_ASSIGN_OR_RETURN(std::string payload, store.Read(ref, BlockType::kFreeList, "free list", &version));
  chain->blocks.insert(chain->blocks.begin(), ref);
  SLABFS_ASSIGN_OR_RETURN(std::vector<FreedExtent> base, DecodeFreeList(payload, sb.file_end, version, next_generation));
  chain->base_extents = base.size();
  if (deltas.empty()) return base;
  FreeExtentSet set(base);
  for (auto d = deltas.rbegin(); d != deltas.rend(); ++d) {
    chain->delta_changes += d->changes.size();
    for (const FreeListChange& c : d->changes) SLABFS_RETURN_IF_ERROR_R(set.Apply(c));
  }
  SLABFS_RETURN_IF_ERROR_R(set.CheckBounds(sb.file_end));
  return set.Extents();
}

Result<BlockRef> FreeListLog::Write(BlockStore& store, uint64_t generation, int64_t now) {
  Allocator& alloc = *store.allocator();
  // A block an earlier attempt wrote is garbage (fresh: free at once).
  store.Free(attempt_);
  attempt_ = {};
  const bool base = chain_freed_ || force_base_ || chain_.blocks.empty() ||
                    chain_.blocks.size() > kMaxFreeListDepth ||
                    chain_.delta_changes + alloc.num_changes() > chain_.base_extents + kMinChangesBeforeBase;
  if (base && !chain_freed_) {
    // The old chain is garbage in the new state.
    for (const BlockRef& b : chain_.blocks) store.Free(b);
    chain_freed_ = true;
  }
  alloc.TrimTail();
  std::string image;
  BlockRef ref;
  size_t entries = 0;
  if (base) {
    // The block's own allocation changes the list by at most two extents.
    const size_t slots = alloc.Unreferenced(generation, now).size() + 2;
    const uint64_t len = kBlockHeaderBytes + FreeListPayloadBytes(slots);
    ref = {alloc.Allocate(len, 64), static_cast<uint32_t>(len)};
    std::vector<FreedExtent> unreferenced = alloc.Unreferenced(generation, now);
    entries = unreferenced.size();
    if (entries > slots) {
      alloc.Free(ref.addr, ref.len);
      return Err(Status::IOError("free list grew while being written"));
    }
    image = EncodeBlock(BlockType::kFreeList, EncodeFreeList(unreferenced, slots), kFreeListVersion);
  } else {
    // Its own allocation adds at most two changes.
    const size_t slots = alloc.num_changes() + 2;
    const uint64_t len = kBlockHeaderBytes + FreeListDeltaPayloadBytes(slots);
    ref = {alloc.Allocate(len, 64), static_cast<uint32_t>(len)};
    FreeListDelta d;
    d.prev = chain_.blocks.back();
    d.depth = static_cast<uint32_t>(chain_.blocks.size());  // the base is depth 0
    d.changes = alloc.Changes(generation, now);
    entries = d.changes.size();
    if (entries > slots) {
      alloc.Free(ref.addr, ref.len);
      return Err(Status::IOError("free-list delta grew while being written"));
    }
    image = EncodeBlock(BlockType::kFreeListDelta, EncodeFreeListDelta(d, slots));
  }
  Status s = store.file()->WriteAt(ref.addr, image.data(), image.size());
  if (!s.ok()) {
    alloc.Free(ref.addr, ref.len);
    return Err(s);
  }
  attempt_ = ref;
  attempt_is_base_ = base;
  attempt_entries_ = entries;
  return ref;
}

void FreeListLog::Durable() {
  if (attempt_is_base_) {
    chain_ = FreeListChain{{attempt_}, attempt_entries_, 0};
  } else {
    chain_.blocks.push_back(attempt_);
    chain_.delta_changes += attempt_entries_;
  }
  attempt_ = {};
  chain_freed_ = false;
  force_base_ = false;
  CountBytes();
}

}  // namespace slabfs::engine
