// A Zarr directory store as its readers walk it: which directories are
// groups and arrays, their metadata and attributes, the chunk keys present
// under an array, and chunk files read with a size bound. The import
// (zarr_import.cc) and the Zarr store (stores/zarr/) both read a store
// through these, so they find the same nodes, chunks and attributes.
//
// Every function reads the file system and nothing else; none keeps state.
// Bytes and names found in the store are untrusted: metadata that breaks
// the spec is Corruption naming the file (zarr_metadata.h), a chunk file
// far larger than its chunk can be is Corruption naming the file.
#ifndef SLABFS_TOOLS_CONVERT_ZARR_LISTING_H_
#define SLABFS_TOOLS_CONVERT_ZARR_LISTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/attribute.h"
#include "slabfs/status.h"
#include "slabfs/types.h"
#include "tools/convert/zarr_json.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::tools::convert {

enum class ZarrNodeKind { kNone, kGroup, kArray };

// Whether the store is Zarr v3 (zarr.json at its root) rather than v2.
bool IsZarrV3Store(const std::string& root);
// What the directory `dir` holds: a v3 store's zarr.json says "group" or
// "array"; a v2 directory holds .zgroup or .zarray. kNone for a path that
// is not a directory or holds neither. Corruption for a node_type that is
// neither, or a v2 directory holding both (`store_path` names it).
Result<ZarrNodeKind> ZarrNodeKindOf(const std::string& dir, bool v3, std::string_view store_path);
// The entries of a directory, sorted by name. IOError.
Result<std::vector<std::string>> ListZarrDir(const std::string& dir);
bool IsZarrDir(const std::string& path);

// An array's metadata (v2: .zarray, its attributes from .zattrs).
Result<ParsedArray> ReadZarrArray(const std::string& dir, bool v3);
// A group's attributes (v2: .zattrs, or {}; v3: zarr.json's attributes).
Result<Json> ReadZarrGroupAttributes(const std::string& dir, bool v3);

// The chunk keys present under an array's directory, as grid coordinates
// sorted in C order; keys outside the chunk grid are counted in `outside`
// and left out. Anything but a directory under a chunk key is listed, so
// that a FIFO or device planted there is refused when read, not skipped.
// Of those outside, the ones past the end along the first dimension only
// (what a shrink interrupted leaves, and a grow would bring back) are in
// `past_end`.
struct ZarrChunkListing {
  std::vector<Dims> chunks;
  uint64_t outside = 0;
  std::vector<Dims> past_end;
};
Result<ZarrChunkListing> ListZarrChunks(const ZarrArray& a, const std::string& dir);

// The most bytes a stored chunk of `expected` decoded bytes is accepted
// at: compressed chunks are rarely much larger than raw ones; anything far
// beyond is not a chunk of this array.
uint64_t ZarrChunkFileLimit(uint64_t expected);
// Reads the whole chunk file at `path` of at most `limit` bytes into *out.
// NotFound when it is missing; Corruption for something that is not a
// regular file, is larger than `limit` or shrinks while read; IOError.
Status ReadZarrChunkFile(const std::string& path, uint64_t limit, std::string* out);
// The same for a chunk stored without codecs, read straight into `out`:
// Corruption unless the file holds exactly `bytes`.
Status ReadRawZarrChunkFile(const std::string& path, uint64_t bytes, char* out);

// A dataset's max shape: from kMaxShapeAttribute (an export's), else the
// shape with a dimension of length 0 able to grow.
Dims ZarrMaxShape(const ZarrArray& a, const Json& attributes);

// One attribute of a Zarr node as slabfs holds it, or why it cannot.
struct ZarrAttribute {
  std::string name;
  std::optional<Attribute> value;
  std::string why_not;
};
// The attributes of a group (array == nullptr) or array as slabfs shows
// them: the JSON attributes converted by AttributeFromJson, without the
// export's own kMaxShapeAttribute; for an array, v3's dimension_names as
// kDimensionsAttribute, and a v2 fill_value as kFillValueAttribute in a
// store xarray reads (see zarr_metadata.h; a _FillValue in the attributes
// is hidden behind it there, as xarray ignores it). A 0-d array's empty
// _ARRAY_DIMENSIONS list is dropped. Names slabfs does not accept and
// values it cannot hold come back with `why_not` set.
std::vector<ZarrAttribute> ZarrAttributes(const Json& attributes, const ZarrArray* array);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_ZARR_LISTING_H_
