#include "engine/index/header_index.h"

namespace slabfs::engine {

HeaderIndex::HeaderIndex(IndexKind kind, const IndexGeometry& geo, std::string what)
    : kind_(kind), geo_(geo), what_(std::move(what)) {}

Result<std::unique_ptr<HeaderIndex>> HeaderIndex::Open(IndexKind kind, const IndexGeometry& geo, std::string_view root,
                                                       BlockStore* store, std::string what) {
  const uint64_t n = geo.max_chunks();
  const uint64_t limit = kind == IndexKind::kSingle ? 1 : kMaxCompactChunks;
  if (n == 0 || n > limit)
    return Err(
        Status::Corruption(what + ": a " + std::string(IndexKindName(kind)) + " index cannot index " +
                           (n == kUnlimited ? std::string("an unlimited grid") : std::to_string(n) + " chunks")));
  std::unique_ptr<HeaderIndex> idx(new HeaderIndex(kind, geo, std::move(what)));
  idx->recs_.assign(n, ChunkRecord{});
  if (root.empty()) return idx;
  const uint64_t file_end = store->allocator()->file_end();
  Reader r(root);
  auto bad = [&](std::string_view why) {
    return Err(Status::Corruption(idx->what_ + ": " + std::string(why) + " in the " + std::string(IndexKindName(kind)) +
                                  " index root"));
  };
  if (kind == IndexKind::kSingle) {
    ChunkRecord rec;
    if (!GetRecord(&r, &rec, geo.filtered) || !r.done()) return bad("bad length");
    if (!rec.allocated()) return bad("an unallocated record");
    SLABFS_RETURN_IF_ERROR_R(CheckRecord(rec, geo, file_end, idx->what_ + " single index"));
    idx->recs_[0] = rec;
    return idx;
  }
  uint16_t count;
  if (!r.U16(&count) || count == 0 || count > n) return bad("a bad record count");
  int64_t last = -1;
  for (uint16_t i = 0; i < count; ++i) {
    uint16_t pos;
    ChunkRecord rec;
    if (!r.U16(&pos) || !GetRecord(&r, &rec, geo.filtered)) return bad("a truncated record");
    if (pos >= n || static_cast<int64_t>(pos) <= last) return bad("a position out of order or range");
    if (!rec.allocated()) return bad("an unallocated record");
    SLABFS_RETURN_IF_ERROR_R(CheckRecord(rec, geo, file_end, idx->what_ + " compact index"));
    idx->recs_[pos] = rec;
    last = pos;
  }
  if (!r.done()) return bad("trailing bytes");
  return idx;
}

Result<uint64_t> HeaderIndex::Position(ChunkCoord c) const {
  if (!geo_.Contains(c)) return Err(Status::InvalidArgument(what_ + ": chunk coordinates outside the chunk grid"));
  return geo_.Linear(c);
}

Result<ChunkRecord> HeaderIndex::Get(ChunkCoord c) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t pos, Position(c));
  return recs_[pos];
}

Status HeaderIndex::Put(ChunkCoord c, const ChunkRecord& rec) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t pos, Position(c));
  recs_[pos] = rec;
  dirty_ = true;
  return Status::OK();
}

Status HeaderIndex::ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) {
  return ForEachInOrder(lo, hi, [&fn](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
    SLABFS_RETURN_IF_ERROR_R(fn(c, rec));
    return true;
  });
}

Status HeaderIndex::ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) {
  const size_t rank = geo_.rank();
  if (lo.size() != rank || hi.size() != rank) return Status::InvalidArgument(what_ + ": range of the wrong rank");
  // Positions in the grid are in C order; there are at most
  // kMaxCompactChunks of them.
  Dims c(rank);
  for (uint64_t pos = 0; pos < recs_.size(); ++pos) {
    if (!recs_[pos].allocated()) continue;
    geo_.Unlinear(pos, c.data());
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) inside = c[d] >= lo[d] && c[d] < hi[d];
    if (!inside) continue;
    SLABFS_ASSIGN_OR_RETURN(bool go, fn(ChunkCoord(c), recs_[pos]));
    if (!go) break;
  }
  return Status::OK();
}

Status HeaderIndex::Flush() {
  dirty_ = false;
  return Status::OK();
}

std::string HeaderIndex::EncodeRoot() const {
  std::string s;
  if (kind_ == IndexKind::kSingle) {
    if (recs_[0].allocated()) PutRecord(&s, recs_[0], geo_.filtered);
    return s;
  }
  uint16_t count = 0;
  for (const ChunkRecord& r : recs_) count += r.allocated() ? 1 : 0;
  if (count == 0) return s;
  PutU16(&s, count);
  for (uint64_t pos = 0; pos < recs_.size(); ++pos) {
    if (!recs_[pos].allocated()) continue;
    PutU16(&s, static_cast<uint16_t>(pos));
    PutRecord(&s, recs_[pos], geo_.filtered);
  }
  return s;
}

Status HeaderIndex::Destroy() {
  recs_.assign(recs_.size(), ChunkRecord{});
  dirty_ = true;
  return Status::OK();
}

}  // namespace slabfs::engine
