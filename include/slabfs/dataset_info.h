// What a dataset is: DatasetInfo, its shape, layout and storage figures.
#ifndef SLABFS_DATASET_INFO_H_
#define SLABFS_DATASET_INFO_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "slabfs/dataset_options.h"
#include "slabfs/dims.h"
#include "slabfs/dtype.h"

namespace slabfs {

struct DatasetInfo {
  DType dtype = DType::kU1;
  Dims shape;
  Dims max_shape;
  Dims chunks;
  std::string fill;  // ItemSize(dtype) bytes
  IndexKind index = IndexKind::kAuto;
  uint64_t num_elements = 0;      // product of shape
  uint64_t size_bytes = 0;        // num_elements * item size
  uint64_t num_chunks = 0;        // chunks in the chunk grid
  uint64_t allocated_chunks = 0;  // chunks stored in the container (as of now)
  uint64_t stored_bytes = 0;      // bytes of chunk data stored (as of now)
  uint64_t index_bytes = 0;       // bytes the chunk index takes on disk (last commit)
  // The first dimension was created able to change (max shape != shape):
  // the length of the dataset's byte view changes with writes past the end
  // and SetSizeBytes.
  bool length_resizable = false;
  // The filter pipeline in the canonical form of DatasetOptions::filters
  // ("shuffle,deflate=6,checksum"); empty when the dataset has none.
  std::string filters;
  bool sparse = false;
  // Sparse datasets: elements defined (written and not erased), counting
  // cached changes once they are written back (at the latest at a commit).
  // 0 for dense datasets; Dataset::CountDefined counts for both.
  uint64_t defined_elements = 0;
};

// The creation options of a dataset with the layout `info` describes (its
// dtype, shape, max shape, chunks, fill, filters, sparse, index and
// whether its length can change), to make a copy or to relayout another.
DatasetOptions OptionsOf(const DatasetInfo& info);

// Calls f(name, value) for every field, named as the members are, with the
// value as its member's type (DType, const Dims&, const std::string&,
// IndexKind, uint64_t or bool), in the order `slab info` prints them: the
// layout (dtype, shape, max_shape, chunks, fill, index, filters, sparse,
// length_resizable), then the figures (num_elements, defined_elements,
// size_bytes, num_chunks, allocated_chunks, stored_bytes, index_bytes).
// Front ends turn each type into their own form and may skip or rename a
// field (Python's "maxshape").
template <class F>
void VisitFields(const DatasetInfo& i, F&& f) {
  using N = std::string_view;
  f(N("dtype"), i.dtype);
  f(N("shape"), i.shape);
  f(N("max_shape"), i.max_shape);
  f(N("chunks"), i.chunks);
  f(N("fill"), i.fill);
  f(N("index"), i.index);
  f(N("filters"), i.filters);
  f(N("sparse"), i.sparse);
  f(N("length_resizable"), i.length_resizable);
  f(N("num_elements"), i.num_elements);
  f(N("defined_elements"), i.defined_elements);
  f(N("size_bytes"), i.size_bytes);
  f(N("num_chunks"), i.num_chunks);
  f(N("allocated_chunks"), i.allocated_chunks);
  f(N("stored_bytes"), i.stored_bytes);
  f(N("index_bytes"), i.index_bytes);
}

}  // namespace slabfs

#endif  // SLABFS_DATASET_INFO_H_
