#include "engine/index/chunk_index.h"

#include <algorithm>

#include "engine/format/layout.h"
#include "engine/index/btree.h"
#include "engine/index/header_index.h"
#include "engine/index/paged_array.h"

namespace slabfs::engine {

uint64_t IndexGeometry::max_chunks() const {
  uint64_t n = 1;
  for (uint64_t g : max_grid) {
    if (g == kUnlimited || (g != 0 && n > kUnlimited / g)) return kUnlimited;
    n *= g;
  }
  return n;
}

bool IndexGeometry::Contains(ChunkCoord c) const {
  if (c.size() != max_grid.size()) return false;
  for (size_t d = 0; d < c.size(); ++d)
    if (max_grid[d] != kUnlimited && c[d] >= max_grid[d]) return false;
  return true;
}

uint64_t IndexGeometry::Linear(ChunkCoord c) const {
  uint64_t l = 0;
  for (size_t d = 0; d < c.size(); ++d) l = l * max_grid[d] + c[d];
  return l;
}

void IndexGeometry::Unlinear(uint64_t linear, uint64_t* c) const {
  for (size_t d = max_grid.size(); d-- > 0;) {
    c[d] = linear % max_grid[d];
    linear /= max_grid[d];
  }
}

// Walks k's dimensions while they are inside the box: a dimension below the
// box jumps to the box's corner from there on; one at or above it bumps the
// last earlier dimension that can still grow.
bool SeekInBox(const uint64_t* k, ChunkCoord lo, ChunkCoord hi, uint64_t* out) {
  const size_t rank = lo.size();
  for (size_t i = 0; i < rank; ++i) {
    if (k[i] < lo[i]) {
      std::copy(k, k + i, out);
      std::copy(lo.begin() + i, lo.end(), out + i);
      return true;
    }
    if (k[i] >= hi[i]) {
      for (size_t j = i; j-- > 0;) {
        if (k[j] + 1 < hi[j]) {  // k[j] < hi[j], so no overflow
          std::copy(k, k + j, out);
          out[j] = k[j] + 1;
          std::copy(lo.begin() + j + 1, lo.end(), out + j + 1);
          return true;
        }
      }
      return false;
    }
  }
  std::copy(k, k + rank, out);
  return true;
}

size_t RecordBytes(bool filtered) { return filtered ? 16 : 8; }

void PutRecord(std::string* dst, const ChunkRecord& rec, bool filtered) {
  PutU64(dst, rec.addr);
  if (filtered) {
    PutU32(dst, rec.size);
    PutU32(dst, rec.filter_mask);
  }
}

bool GetRecord(Reader* r, ChunkRecord* rec, bool filtered) {
  *rec = ChunkRecord{};
  if (!r->U64(&rec->addr)) return false;
  if (filtered && (!r->U32(&rec->size) || !r->U32(&rec->filter_mask))) return false;
  return true;
}

Status CheckRecord(const ChunkRecord& rec, const IndexGeometry& geo, uint64_t file_end, std::string_view what) {
  auto bad = [&](std::string_view why) { return Status::Corruption(std::string(what) + ": " + std::string(why)); };
  if (!rec.allocated()) {
    if (rec.size != 0 || rec.filter_mask != 0) return bad("unallocated chunk record with a size or filter mask");
    return Status::OK();
  }
  if (rec.addr < kDataStart || rec.addr >= file_end) return bad("chunk address out of bounds");
  if (geo.filtered) {
    if (rec.size == 0 || rec.size > geo.max_chunk_bytes) return bad("chunk record claims an impossible stored size");
    if (file_end - rec.addr < rec.size) return bad("chunk extent reaches past the end of the container");
  } else if (rec.size != 0 || rec.filter_mask != 0) {
    return bad("size or filter mask in an unfiltered chunk record");
  }
  return Status::OK();
}

Status ChunkIndex::ForEach(const Visitor& fn) {
  Dims lo(geometry().rank(), 0), hi(geometry().rank(), kUnlimited);
  return ForEachIn(ChunkCoord(lo), ChunkCoord(hi), fn);
}

Result<std::unique_ptr<ChunkIndex>> OpenChunkIndex(IndexKind kind, const IndexGeometry& geo, std::string_view root,
                                                   BlockStore* store, std::string what) {
  if (geo.rank() < 1 || geo.rank() > static_cast<size_t>(kMaxRank))
    return Err(Status::Corruption(what + ": bad rank for a chunk index"));
  auto up = [](auto r) -> Result<std::unique_ptr<ChunkIndex>> {
    if (!r) return Err(r.error());
    return std::unique_ptr<ChunkIndex>(std::move(*r));
  };
  switch (kind) {
    case IndexKind::kSingle:
    case IndexKind::kCompact: return up(HeaderIndex::Open(kind, geo, root, store, std::move(what)));
    case IndexKind::kFixedArray:
    case IndexKind::kExtensibleArray: return up(PagedArrayIndex::Open(kind, geo, root, store, std::move(what)));
    case IndexKind::kBTree: return up(BTreeIndex::Open(geo, root, store, std::move(what)));
    case IndexKind::kAuto: break;
  }
  return Err(Status::Corruption(what + ": unknown index kind"));
}

Result<IndexKind> ChooseIndexKind(IndexKind requested, const IndexGeometry& geo, uint64_t compact_limit) {
  size_t unlimited = 0, unlimited_dim = 0;
  for (size_t d = 0; d < geo.rank(); ++d)
    if (geo.max_grid[d] == kUnlimited) {
      ++unlimited;
      unlimited_dim = d;
    }
  const uint64_t total = geo.max_chunks();  // kUnlimited when unbounded
  uint64_t row = 1;                         // chunks per step along the unlimited dimension
  bool row_fits = true;
  for (size_t d = 0; d < geo.rank(); ++d) {
    if (d == unlimited_dim) continue;
    if (geo.max_grid[d] > kMaxExtensibleRowChunks || row > kMaxExtensibleRowChunks / geo.max_grid[d]) {
      row_fits = false;
      break;
    }
    row *= geo.max_grid[d];
  }
  auto refuse = [&](std::string why) -> Result<IndexKind> {
    return Err(
        Status::InvalidArgument("index '" + std::string(IndexKindName(requested)) + "' cannot work here: " + why));
  };
  switch (requested) {
    case IndexKind::kSingle:
      if (total != 1) return refuse("the dataset can have more than one chunk");
      return requested;
    case IndexKind::kCompact:
      if (total == kUnlimited) return refuse("the dataset has an unlimited dimension");
      if (total > kMaxCompactChunks)
        return refuse("the dataset can have " + std::to_string(total) + " chunks, more than the " +
                      std::to_string(kMaxCompactChunks) + " a compact index holds");
      return requested;
    case IndexKind::kFixedArray:
      if (unlimited > 0) return refuse("the dataset has an unlimited dimension");
      if (total > kMaxFixedArrayChunks)
        return refuse("the maximum shape has " + std::to_string(total) + " chunks, more than " +
                      std::to_string(kMaxFixedArrayChunks) + " (use btree)");
      return requested;
    case IndexKind::kExtensibleArray:
      if (unlimited != 1)
        return refuse("it needs exactly one unlimited dimension, the dataset has " + std::to_string(unlimited));
      if (!row_fits)
        return refuse("a step along the unlimited dimension spans more than " +
                      std::to_string(kMaxExtensibleRowChunks) + " chunks (use btree)");
      return requested;
    case IndexKind::kBTree: return requested;
    case IndexKind::kAuto: break;
  }
  if (total == 1) return IndexKind::kSingle;
  if (total <= compact_limit && total <= kMaxCompactChunks) return IndexKind::kCompact;
  if (unlimited == 0 && total <= kMaxFixedArrayChunks) return IndexKind::kFixedArray;
  if (unlimited == 1 && row_fits) return IndexKind::kExtensibleArray;
  return IndexKind::kBTree;
}

}  // namespace slabfs::engine
