// Zarr array metadata: v2's .zarray and v3's zarr.json read into one
// description (ZarrArray), chunk keys, and the metadata slab export writes.
//
// Reading separates two kinds of trouble. Metadata that breaks the spec
// (bad JSON types, negative or absurd shapes, a chunk shape of another
// rank, an unknown order) is an error: Corruption naming the file. An array
// that is valid Zarr but that slabfs cannot hold (a dtype such as bool,
// complex or strings, a codec such as sharding or zstd, chunks over
// slabfs's 1 GiB chunk limit) parses with `unsupported` saying
// what, so that the import can skip it with a note, or refuse it with
// --strict. A 0-d array parses as shape (1), chunks (1) with `scalar` set
// (see scalar.h).
#ifndef SLABFS_TOOLS_CONVERT_ZARR_METADATA_H_
#define SLABFS_TOOLS_CONVERT_ZARR_METADATA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"
#include "tools/convert/zarr_codecs.h"
#include "tools/convert/zarr_json.h"

namespace slabfs::tools::convert {

// A dataset's max shape in an exported store (a list with null for an
// unlimited dimension), read back on import: a member of .zarray (v2, where
// readers ignore members they do not know, and xarray does not show it as
// an attribute) or an attribute (v3, and v2 stores of older exports).
inline constexpr std::string_view kMaxShapeAttribute = "_slab_max_shape";
// xarray's convention for dimension names (v2), which slabfs keeps as a
// string attribute holding a JSON list such as ["time","lat","lon"].
inline constexpr std::string_view kDimensionsAttribute = "_ARRAY_DIMENSIONS";
// The CF missing-value marker. A Zarr v2 export writes it as the array's
// fill_value (as xarray does), not in .zattrs; an import of a v2 array
// that xarray reads keeps a non-null fill_value as this attribute.
inline constexpr std::string_view kFillValueAttribute = "_FillValue";

struct ZarrArray {
  int zarr_format = 2;
  DType dtype = DType::kU1;
  bool big_endian = false;  // elements are stored big-endian
  Dims shape;
  Dims chunks;
  std::string fill;  // ItemSize(dtype) little-endian bytes
  // v2: fill_value was given (not null). xarray takes a v2 fill_value for
  // the missing-value marker (_FillValue), so the import of an array xarray
  // reads (one with _ARRAY_DIMENSIONS) keeps it as that attribute too.
  bool fill_is_marker = false;
  // v2: the kMaxShapeAttribute member of .zarray, if any.
  std::optional<Json> max_shape;
  // The chunk's stored dimension order: empty for C order, else the
  // permutation of the transpose codec (v2's F order is rank-1, ..., 0).
  std::vector<size_t> transpose;
  std::vector<ZarrCodec> codecs;  // bytes -> bytes, in the order Zarr encodes
  // Chunk keys: v3's default encoding starts with "c"; the separator is
  // '.' (flat names) or '/' (nested directories).
  bool key_prefix_c = false;
  char separator = '.';
  Json attributes = Json::object();
  // v3's dimension_names (strings or nulls), when given.
  std::optional<Json> dimension_names;
  // A 0-d array (shape [], chunks []), held as shape (1), chunks (1): its
  // one chunk has the key "0" (v2 key encoding) or "c" (v3 default).
  bool scalar = false;

  uint64_t chunk_elements() const;  // product of chunks
};

struct ParsedArray {
  ZarrArray array;
  std::string unsupported;  // empty when slabfs can hold the array
};

// `what` names the metadata file in messages.
Result<ParsedArray> ParseZarray(const Json& zarray, std::string_view what);
Result<ParsedArray> ParseV3Array(const Json& zarr_json, std::string_view what);
// Checks a v3 group's zarr.json and returns its attributes.
Result<Json> ParseV3Group(const Json& zarr_json, std::string_view what);

// A chunk index from one component of a chunk key: decimal digits without
// a sign or leading zeros; nullopt otherwise.
std::optional<uint64_t> ParseKeyIndex(std::string_view text);
// The key of the chunk at `coords` ("0.3", "0/3", "c/0/3"; a scalar's
// one chunk: "0" or "c").
std::string ChunkKey(const ZarrArray& a, const Dims& coords);

// The slabfs filter pipeline that keeps an imported array compressed the
// way its source was: "shuffle" when the source shuffled (blosc), deflate
// at the zlib/gzip level (blosc: its clevel with cname zlib, else 1; none
// at level 0), "checksum" for a crc32c codec.
std::string FiltersFor(const ZarrArray& a);

// The element value as Zarr JSON writes it (numbers; "NaN", "Infinity",
// "-Infinity" for floats; v3 writes other NaNs as "0x..." bit patterns).
Json FillToJson(DType t, std::string_view bytes, int zarr_format);
// The Zarr dtype names: "<f4", "|u1" (v2); "float32", "uint8" (v3).
std::string V2DTypeName(DType t);
std::string V3DTypeName(DType t);

// How an exported dataset's chunks are encoded, from its slabfs filters:
// deflate=N alone is zlib (v2) or gzip (v3) at level N; shuffle with deflate
// is blosc with cname zlib, byte shuffle and clevel N; checksum is v3's
// crc32c (v2 has no such codec: `note` says it is dropped); shuffle alone
// changes no stored value and is dropped.
struct ExportEncoding {
  std::vector<ZarrCodec> codecs;
  Json metadata;     // v2: the "compressor" value; v3: the "codecs" list
  std::string note;  // what could not be carried over, if anything
};
ExportEncoding EncodingFor(const DatasetInfo& info, int zarr_format);

// An exported array's fill_value, and whether every chunk must be written.
// v2: the value of the dataset's _FillValue attribute `marker` (a number,
// converted to the dataset's dtype), else null: xarray reads a v2
// fill_value as the missing-value marker, so the storage fill value (what
// unwritten elements read as) must not go there; and unless fill_value is
// the storage fill value itself, chunks the dataset does not store are
// written too (zarr-python reads a missing chunk of a null fill_value as
// uninitialized memory). v3: the storage fill value (v3 requires one).
struct ExportFill {
  Json value;
  bool every_chunk = false;
  bool marker_used = false;  // the marker became fill_value (not kept in .zattrs)
};
ExportFill FillForExport(const DatasetInfo& info, const Attribute* marker, int zarr_format);

// One element of a numeric attribute as `to`'s little-endian bytes, if it
// converts exactly (any float to a float type; integral values within
// range to an integer type); nullopt otherwise (a string, several
// elements, a value the type cannot hold).
std::optional<std::string> ElementAs(DType to, const Attribute& a);

// kDimensionsAttribute as slabfs holds it (the list's JSON text): the list,
// when the attribute is text holding a JSON list of names (v3 also allows
// null for an unnamed dimension); nullopt otherwise. Zarr writes it as that
// list (v2's .zattrs, v3's dimension_names): xarray wants a list.
std::optional<Json> DimensionNamesList(const Attribute& a, int zarr_format);

// The metadata document of an exported array (.zarray or zarr.json; v2's
// attributes go to .zattrs instead) and of a group.
Json ArrayMetadata(const DatasetInfo& info, const ExportEncoding& e, int zarr_format, const Json& attributes,
                   const std::optional<Json>& dimension_names, const Json& fill_value);
Json GroupMetadata(int zarr_format, const Json& attributes);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_ZARR_METADATA_H_
