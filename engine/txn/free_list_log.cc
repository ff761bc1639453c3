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

Result<std::vector<FreedExtent>> ReadFreeListChain(BlockStore& store, const Superblock& sb, FreeListChain* chain) {
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
    chain->deltas.insert(chain->deltas.begin(), d.changes);
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
  // With deltas after it, the base is checked against the file end only
  // once they are applied: a later commit may have cut the file below its
  // last extents (and its delta says so).
  SLABFS_ASSIGN_OR_RETURN(std::vector<FreedExtent> base,
                          DecodeFreeList(payload, deltas.empty() ? sb.file_end : UINT64_MAX, version, next_generation));
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
  const size_t deltas = chain_.deltas.size();
  // The deltas this one takes in: while the last kFanIn - 1 before them are
  // all of the tier it would have, one tier up. A retry keeps what an
  // earlier attempt freed.
  size_t merged = 0;
  int tier = 0;
  while (merged + kFanIn - 1 <= deltas) {
    bool same = true;
    for (size_t i = deltas - merged - (kFanIn - 1); i < deltas - merged; ++i) same = same && chain_.tiers[i] == tier;
    if (!same) break;
    merged += kFanIn - 1;
    ++tier;
  }
  if (merged_freed_ > 0) {
    merged = merged_freed_;
    tier = attempt_tier_;
  }
  size_t carried = 0;  // changes of the deltas taken in
  for (size_t i = deltas - merged; i < deltas; ++i) carried += chain_.deltas[i].size();
  const bool base = chain_freed_ || force_base_ || chain_.blocks.empty() ||
                    chain_.blocks.size() - merged > kMaxFreeListDepth ||
                    chain_.delta_changes + alloc.num_changes() > chain_.base_extents + kMinChangesBeforeBase;
  if (base && !chain_freed_) {
    // The old chain (less what a merge already freed) is garbage in the new state.
    for (size_t i = 0; i + merged_freed_ < chain_.blocks.size(); ++i) store.Free(chain_.blocks[i]);
    chain_freed_ = true;
  } else if (!base && merged > 0 && merged_freed_ == 0) {
    for (size_t i = chain_.blocks.size() - merged; i < chain_.blocks.size(); ++i) store.Free(chain_.blocks[i]);
    merged_freed_ = merged;
  }
  alloc.TrimTail();
  std::string image;
  BlockRef ref;
  size_t entries = 0;
  if (base) {
    // The block's own allocation changes the list by at most two extents.
    const size_t slots = alloc.Unreferenced(generation, now).size() + 2;
    const uint64_t len = kBlockHeaderBytes + FreeListPayloadBytes(slots);
    ref = {alloc.Allocate(len, Allocator::kPackedAlign), static_cast<uint32_t>(len)};
    std::vector<FreedExtent> unreferenced = alloc.Unreferenced(generation, now);
    entries = unreferenced.size();
    if (entries > slots) {
      alloc.Free(ref.addr, ref.len);
      return Err(Status::IOError("free list grew while being written"));
    }
    image = EncodeBlock(BlockType::kFreeList, EncodeFreeList(unreferenced, slots), kFreeListVersion);
    attempt_changes_.clear();
  } else {
    // The changes of the deltas taken in, then this commit's; its own
    // allocation adds at most two.
    const size_t slots = carried + alloc.num_changes() + 2;
    const uint64_t len = kBlockHeaderBytes + FreeListDeltaPayloadBytes(slots);
    ref = {alloc.Allocate(len, Allocator::kPackedAlign), static_cast<uint32_t>(len)};
    FreeListDelta d;
    d.prev = chain_.blocks[chain_.blocks.size() - 1 - merged];
    d.depth = static_cast<uint32_t>(chain_.blocks.size() - merged);  // the base is depth 0
    d.changes.reserve(slots);
    for (size_t i = deltas - merged; i < deltas; ++i)
      d.changes.insert(d.changes.end(), chain_.deltas[i].begin(), chain_.deltas[i].end());
    std::vector<FreeListChange> mine = alloc.Changes(generation, now);
    d.changes.insert(d.changes.end(), mine.begin(), mine.end());
    entries = d.changes.size();
    if (entries > slots) {
      alloc.Free(ref.addr, ref.len);
      return Err(Status::IOError("free-list delta grew while being written"));
    }
    image = EncodeBlock(BlockType::kFreeListDelta, EncodeFreeListDelta(d, slots));
    attempt_changes_ = std::move(d.changes);
  }
  Status s = store.file()->WriteAt(ref.addr, image.data(), image.size());
  if (!s.ok()) {
    alloc.Free(ref.addr, ref.len);
    return Err(s);
  }
  attempt_ = ref;
  attempt_is_base_ = base;
  attempt_entries_ = entries;
  attempt_merged_ = merged;
  attempt_tier_ = tier;
  return ref;
}

void FreeListLog::Durable() {
  if (attempt_is_base_) {
    chain_ = FreeListChain{{attempt_}, attempt_entries_, 0, {}, {}};
  } else {
    for (size_t i = 0; i < attempt_merged_; ++i) {
      chain_.blocks.pop_back();
      chain_.delta_changes -= chain_.deltas.back().size();
      chain_.deltas.pop_back();
      chain_.tiers.pop_back();
    }
    chain_.blocks.push_back(attempt_);
    chain_.delta_changes += attempt_changes_.size();
    chain_.deltas.push_back(std::move(attempt_changes_));
    chain_.tiers.push_back(attempt_tier_);
  }
  attempt_changes_.clear();
  attempt_ = {};
  chain_freed_ = false;
  merged_freed_ = 0;
  force_base_ = false;
  CountBytes();
}

}  // namespace slabfs::engine
