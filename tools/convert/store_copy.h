// Import and export as copies between two stores (include/slabfs/store.h):
// one driver walks the source store (a slab container, an HDF5 / netCDF-4
// file, a Zarr store) and writes into a sink (a container for import, an
// HDF5 file or a Zarr store for export).
//
// The driver (store_copy.cc) owns everything the directions share: the
// walk of the tree under --path (groups, attributes, datasets with their
// dtype, shape, chunks, fill and filters), what the source skipped (a line
// each, --strict's refusal, damaged metadata as an error), the chunk by
// chunk copy in the destination's chunk grid with one block of whole chunks
// in memory, the hole skipping (a chunk the source never stored is never
// written, so it stays unallocated in the destination and reads as the
// fill value there too; for a sparse source, chunks without a defined
// element count as holes where the sink says so), the copy of chunks kept
// as the container keeps them without a decode and encode, progress and
// Ctrl-C. A sink only says how its format creates a group, a dataset and
// an attribute and writes a box of whole chunks (container_sink.cc,
// hdf5_sink.cc, zarr_sink.cc).
#ifndef SLABFS_TOOLS_CONVERT_STORE_COPY_H_
#define SLABFS_TOOLS_CONVERT_STORE_COPY_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "slabfs/container.h"
#include "slabfs/status.h"
#include "slabfs/store.h"
#include "stores/object_path.h"
#include "tools/convert/progress.h"

namespace slabfs::tools::convert {

using stores::BaseName;
using stores::JoinPath;

using Attrs = std::vector<std::pair<std::string, Attribute>>;

struct CopyGroup {
  std::string src;     // path in the source
  std::string dest;    // path in the destination
  bool create = true;  // false for the group that receives the copy (import --into, export's root)
  Attrs attrs;
};

struct CopyDataset {
  std::string src;
  std::string dest;   // a sink may rename (netCDF's _nc4_non_coord_)
  std::string group;  // the destination path of its group
  std::shared_ptr<const StoreDataset> ds;
  StoreDatasetInfo info;
  // A rank-0 array: an HDF5 scalar or 0-d Zarr array of the source, or a
  // container dataset that stands for one (scalar.h). Shape (1); the
  // marker attribute is not among attrs.
  bool scalar = false;
  Attrs attrs;
};

// What the copy makes, in order: the groups (parents first), then the
// datasets.
struct CopyPlan {
  std::vector<CopyGroup> groups;
  std::vector<CopyDataset> datasets;
};

// Lines about what a copy leaves out or changes.
class CopyReport {
 public:
  CopyReport(std::ostream& out, bool strict) : out_(out), strict_(strict) {}
  // "skipped WHAT": a line, or with --strict the error that ends the copy.
  Status Skip(std::string_view what);
  void Note(std::string_view what);
  std::ostream& out() { return out_; }

 private:
  std::ostream& out_;
  bool strict_;
};

// How the driver writes one dataset of the sink.
struct ChunkGrid {
  Dims chunks;  // the destination's chunks: the grid the copy walks
  Dims shape;   // the destination's shape: the source's, or longer (the rest reads as fill)
  // Every chunk of the grid is written, stored in the source or not.
  bool every_chunk = false;
  // Of a sparse source, chunks without a defined element are not written.
  bool skip_undefined = false;
  // Write takes boxes of many whole chunks (else one chunk per call).
  bool blocks = false;
  // Write wants whole chunks, the part past the source's shape filled with
  // its fill value (Zarr stores edge chunks full size): start is a chunk's
  // corner, count the chunk shape.
  bool padded = false;
  // With `padded`: the element (its bytes) written past the source's shape,
  // where that is not the source's fill value ("" for the fill value).
  std::string pad_value;
  // WriteEncoded takes chunks as StoreDataset::ReadEncodedChunk gives them.
  bool encoded = false;
};

class DatasetWriter {
 public:
  virtual ~DatasetWriter() = default;
  virtual const ChunkGrid& grid() const = 0;
  // The box [start, start + count) from `data`, a dense C-order array of
  // count: whole chunks of the grid, clipped to the source's shape (unless
  // padded).
  virtual Status Write(const Dims& start, const Dims& count, const char* data) = 0;
  // The chunk at grid coordinates `coords` as the source keeps it;
  // InvalidArgument or NotSupported to have it decoded and written.
  virtual Status WriteEncoded(const Dims& coords, std::string_view bytes, uint32_t filter_mask);
  virtual Status Close() { return Status::OK(); }
};

class CopySink {
 public:
  virtual ~CopySink() = default;
  // Sees the whole plan before anything is written; may refuse it, or
  // change destination paths.
  virtual Status Begin(CopyPlan& plan) = 0;
  virtual Status MakeGroup(const CopyGroup& g) = 0;
  virtual Result<std::unique_ptr<DatasetWriter>> MakeDataset(const CopyDataset& d) = 0;
  // After every dataset was written.
  virtual Status Finish() = 0;
};

struct CopyOptions {
  std::string from = "/";   // the source's group or dataset
  std::string into = "/";   // the destination group that receives it
  bool strict = false;      // refuse, instead of skipping, what the source leaves out
  bool recompress = false;  // never take chunks as stored
  // A group of the source is copied as its children into `into` (export's
  // whole tree); otherwise it becomes a group named like it inside `into`.
  bool group_is_root = false;
};

// A chunk grid for copying a contiguous dataset of `shape` through memory:
// whole rows of the last dimensions, about one transfer block each.
Dims BoundedChunks(const Dims& shape, DType dtype);

// Plans the copy of o.from of `src` into o.into (the skip lines and notes
// go to `report`), then has `sink` write it.
Status CopyStore(const Store& src, const CopyOptions& o, CopySink& sink, Progress& progress, CopyReport& report);

// Sinks.
std::unique_ptr<CopySink> ContainerSink(Container& dest, const std::string& container_path, CopyReport& report);
std::unique_ptr<CopySink> Hdf5Sink(const std::string& target, CopyReport& report);
std::unique_ptr<CopySink> ZarrSink(const std::string& target, int zarr_format, CopyReport& report);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_STORE_COPY_H_
