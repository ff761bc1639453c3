// How a dataset is made: DatasetOptions and the chunk index kinds.
#ifndef SLABFS_DATASET_OPTIONS_H_
#define SLABFS_DATASET_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "slabfs/dims.h"
#include "slabfs/dtype.h"
#include "slabfs/status.h"

namespace slabfs {

enum class IndexKind : unsigned char {
  kAuto = 0,  // chosen from the shape at creation
  kSingle = 1,
  kCompact = 2,
  kFixedArray = 3,
  kExtensibleArray = 4,
  kBTree = 5,
};
std::string_view IndexKindName(IndexKind k);  // "fixed", "btree", ...
Result<IndexKind> ParseIndexKind(std::string_view name);

struct DatasetOptions {
  DType dtype = DType::kU1;
  Dims shape;        // rank 1..32; a dimension may be 0 only if it can grow
  Dims max_shape;    // empty: same as shape (fixed); kUnlimited or >= shape
  Dims chunks;       // empty: chosen automatically; else same rank, all >= 1
  std::string fill;  // empty: zero; else exactly ItemSize(dtype) bytes
  IndexKind index = IndexKind::kAuto;
  // kAuto picks the compact index for at most this many chunks (at most 64).
  uint64_t compact_limit = 8;
  // The filter pipeline each chunk goes through, in order, on its way to the
  // file: "shuffle" (byte shuffle by element size), "deflate=N" (zlib level
  // 1-9; plain "deflate" is 6), "checksum" (CRC-32C of the stored chunk,
  // verified on every read), comma-separated, each at most once, e.g.
  // "shuffle,deflate=6,checksum". Empty or "none": no filters.
  std::string filters;
  // Whether the length of the byte view can change (DatasetInfo::
  // length_resizable); unset: when max_shape[0] differs from shape[0].
  // Copies set it from the source, whose shapes alone may not tell.
  std::optional<bool> length_resizable;
  // Sparse: only elements written (and not erased) are defined; the others
  // read as the fill value and take no space (see Dataset::Defined, Erase).
  bool sparse = false;
};

}  // namespace slabfs

#endif  // SLABFS_DATASET_OPTIONS_H_
