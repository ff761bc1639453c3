// The two index kinds that live in the dataset header, with no index block
// on disk: single (a dataset of one chunk: the root is that chunk's record)
// and compact (at most kMaxCompactChunks chunks: the root lists the
// allocated ones). A change rewrites only the dataset header, which a
// commit rewrites anyway.
//
// Root (docs/format.md):
//   single:   empty (unallocated), or one record
//   compact:  empty (nothing allocated), or u16 count, then count x
//             (u16 position in the maximum grid, C order; record), in
//             increasing position
#ifndef SLABFS_ENGINE_INDEX_HEADER_INDEX_H_
#define SLABFS_ENGINE_INDEX_HEADER_INDEX_H_

#include <memory>
#include <vector>

#include "engine/index/chunk_index.h"

namespace slabfs::engine {

class HeaderIndex final : public ChunkIndex {
 public:
  static Result<std::unique_ptr<HeaderIndex>> Open(IndexKind kind, const IndexGeometry& geo, std::string_view root,
                                                   BlockStore* store, std::string what);

  IndexKind kind() const override { return kind_; }
  const IndexGeometry& geometry() const override { return geo_; }
  Result<ChunkRecord> Get(ChunkCoord c) override;
  Status Put(ChunkCoord c, const ChunkRecord& rec) override;
  Status ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) override;
  Status ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) override;
  bool dirty() const override { return dirty_; }
  Status Flush() override;
  std::string EncodeRoot() const override;
  uint64_t disk_bytes() const override { return 0; }
  // Records live in the header: no blocks.
  Status CollectBlocks(std::vector<BlockRef>* /*out*/) override { return Status::OK(); }
  Status Destroy() override;

 private:
  HeaderIndex(IndexKind kind, const IndexGeometry& geo, std::string what);
  Result<uint64_t> Position(ChunkCoord c) const;

  const IndexKind kind_;
  const IndexGeometry geo_;
  const std::string what_;
  std::vector<ChunkRecord> recs_;  // one per chunk of the maximum grid
  bool dirty_ = false;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_HEADER_INDEX_H_
