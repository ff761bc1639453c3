// The .png view of a dataset or slice (`ds.png`, `ds[3].png`): its values
// as an 8-bit PNG picture, for image viewers and file managers.
//
// Which views are pictures (PictureOf), by the view's shape (a slice keeps
// an indexed dimension, of extent 1): a view of rank 2 or more with at
// most two dimensions of an extent other than 1: the first is the rows
// and the second the columns (one alone is the rows, or the columns if it
// is the last dimension). A last dimension of 3 or 4 after at least two
// others is the channels of an RGB or RGBA picture and the rule applies
// to the dimensions before it. Anything else (1-D, a stack of frames) has
// no picture: NotFound. A side
// over kMaxPictureSide or more than kMaxPicturePixels pixels is OutOfRange
// (PNG itself allows 2^31 - 1 a side; these bound a row's memory and the
// time one picture takes). An empty view is InvalidArgument.
//
// Levels: png_scale.h (1st..99th percentile, NaN and missing values 0).
// u1 RGB(A) pictures are shown as stored (levels = values). The dataset's
// string attribute `colormap` (colormap.h) makes a palette picture; without
// it the picture is gray. Numeric attributes `_FillValue` and
// `missing_value` name missing values. A tEXt chunk "Description" states
// the range used.
//
// The size of a PNG is known only once it is encoded, and a file has a
// size from its first stat, so the first lookup, stat or open of a picture
// encodes it, in one ordered pass over its rows (plus the range's sample)
// into a SpillBuffer, and the PngCache keeps it for the next ones until
// the dataset's mtime, shape or these attributes change.
#ifndef SLABFS_FUSEFS_VIEWS_PNG_VIEW_H_
#define SLABFS_FUSEFS_VIEWS_PNG_VIEW_H_

#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fusefs/file_data.h"
#include "fusefs/views/png_encoder.h"
#include "fusefs/views/png_scale.h"
#include "fusefs/views/spill_buffer.h"
#include "fusefs/views/view_layout.h"
#include "slabfs/container.h"
#include "slabfs/store.h"

namespace slabfs::fusefs::views {

inline constexpr uint64_t kMaxPictureSide = uint64_t{1} << 20;
inline constexpr uint64_t kMaxPicturePixels = uint64_t{1} << 30;

struct PictureShape {
  uint64_t height = 0;
  uint64_t width = 0;
  unsigned channels = 1;  // 1, 3 or 4
  size_t row_dim = 0;     // the dimensions of the view that are rows and columns
  size_t col_dim = 1;
};

Result<PictureShape> PictureOf(const Dims& view_shape);

struct PictureOptions {
  std::string colormap = "gray";
  std::vector<double> missing;
};

// The options the dataset's attributes give. InvalidArgument for a
// colormap that is not one of KnownColormaps().
Result<PictureOptions> PictureOptionsOf(const Store& c, ObjectId dataset);

// Encodes the picture of view `v` (kind kPng) of `ds`. Errors of the
// dataset's reads, of the temporary file, and InvalidArgument for a bad
// colormap.
Result<std::shared_ptr<const SpillBuffer>> EncodePicture(const FileData& ds, const ViewLayout& v,
                                                         const PictureShape& shape, const PictureOptions& options);

// Encoded pictures by dataset and selection, each valid for one stamp (the
// dataset's state it was made from); at most kMaxEntries, least recently
// used dropped first (an open file keeps its own reference).
// Thread-safe. Lock order: mu_ is a leaf, never held during an engine
// call; an entry's mutex is held while that entry is encoded, never
// together with mu_.
class PngCache {
 public:
  static constexpr size_t kMaxEntries = 16;
  using Encode = std::function<Result<std::shared_ptr<const SpillBuffer>>()>;

  // The picture of (dataset, selection) made at `stamp`: the cached one,
  // or encode()'s result, kept. One encode at a time per key; another
  // caller of the same key waits for it.
  Result<std::shared_ptr<const SpillBuffer>> Get(ObjectId dataset, const std::string& selection,
                                                 const std::string& stamp, const Encode& encode);
  size_t size();

 private:
  struct Entry {
    std::mutex mu;
    std::string stamp;                       // guarded by mu
    std::shared_ptr<const SpillBuffer> png;  // guarded by mu
  };
  struct Slot {
    std::shared_ptr<Entry> entry;
    uint64_t last_use = 0;
  };
  using Key = std::pair<ObjectId, std::string>;
  std::mutex mu_;
  uint64_t clock_ = 0;         // guarded by mu_
  std::map<Key, Slot> slots_;  // guarded by mu_
};

// For view_ops: resolves the picture of `v` (kind kPng) at the dataset's
// state now (mtime as the mount reports it) and sets v.png and
// v.size_bytes.
Status AttachPicture(PngCache& cache, const Store& c, const FileData& ds, timespec mtime, ViewLayout& v);

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_PNG_VIEW_H_
