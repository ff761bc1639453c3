// The free list of each commit, written as a chain (format/free_list.h): a
// commit writes a delta block of its changes on top of the previous
// commit's list, so its cost grows with what it changed, not with the
// number of free extents. Deltas merge as in a log-structured merge tree:
// a new delta takes in the kFanIn - 1 deltas before it when they are all of
// its tier, and the result is one tier up, so each change is rewritten once
// per tier (log base kFanIn of the changes since the base) and the chain
// stays short (at most kFanIn - 1 deltas per tier). Once the deltas hold
// more changes than the base has extents (and at kMaxFreeListDepth), a
// commit writes the whole list as a new base and frees the chain: that
// costs the list's size, once per as many changes. The writer runs one
// FreeListLog; readers, fsck and the rebuild read chains with
// ReadFreeListChain.
#ifndef SLABFS_ENGINE_TXN_FREE_LIST_LOG_H_
#define SLABFS_ENGINE_TXN_FREE_LIST_LOG_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/format/free_list.h"
#include "engine/format/superblock.h"
#include "engine/space/allocator.h"
#include "engine/txn/block_store.h"

namespace slabfs::engine {

// The blocks of one state's free list and what they hold.
struct FreeListChain {
  std::vector<BlockRef> blocks;  // the base first, then each delta
  size_t base_extents = 0;
  size_t delta_changes = 0;
  // Each delta's changes (blocks[1..]), which a merge writes again, and
  // its tier (0 for deltas read from disk).
  std::vector<std::vector<FreeListChange>> deltas;
  std::vector<int> tiers;
};

// The free list of the state `sb` names: its base with every delta applied.
// `chain` gets each block as it is read (also when a later one fails).
Result<std::vector<FreedExtent>> ReadFreeListChain(BlockStore& store, const Superblock& sb, FreeListChain* chain);

class FreeListLog {
 public:
  // The chain of the committed state the writer starts from (its blocks
  // are referenced until a new base replaces them).
  void Reset(FreeListChain chain) {
    chain_ = std::move(chain);
    chain_.tiers.assign(chain_.deltas.size(), 0);
    CountBytes();
    force_base_ = false;
    chain_freed_ = false;
    merged_freed_ = 0;
    attempt_ = {};
  }
  // Deltas of one tier that merge into one of the next.
  static constexpr size_t kFanIn = 8;
  // The next commit writes a whole base (the list was rebuilt).
  void ForceBase() { force_base_ = true; }
  // Writes the free list of the commit of `generation`, made at `now`:
  // frees what an earlier failed attempt wrote, trims the file's free tail,
  // allocates and writes a delta or a base. The caller puts the returned
  // block into the superblock.
  Result<BlockRef> Write(BlockStore& store, uint64_t generation, int64_t now);
  // The commit holding the block Write returned is durable.
  void Durable();

  const FreeListChain& chain() const { return chain_; }
  // The bytes of chain_'s blocks; any thread may ask.
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  void CountBytes() {
    uint64_t n = 0;
    for (const BlockRef& b : chain_.blocks) n += b.len;
    bytes_.store(n, std::memory_order_relaxed);
  }

  FreeListChain chain_;  // as of the last durable commit
  std::atomic<uint64_t> bytes_{0};
  bool force_base_ = false;
  // This commit writes a base and has freed chain_'s blocks (so every retry
  // until it is durable writes a base too).
  bool chain_freed_ = false;
  // This commit's delta takes in the last merged_freed_ deltas, whose
  // blocks it has freed (so every retry until it is durable does too).
  size_t merged_freed_ = 0;
  BlockRef attempt_;  // written by the current commit's latest attempt
  bool attempt_is_base_ = false;
  size_t attempt_entries_ = 0;
  size_t attempt_merged_ = 0;  // deltas the attempt's delta takes in
  int attempt_tier_ = 0;
  std::vector<FreeListChange> attempt_changes_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_TXN_FREE_LIST_LOG_H_
