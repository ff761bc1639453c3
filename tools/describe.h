// The description of one group or dataset that `slab info` prints, as text
// or as JSON, and the JSON form of element values and attributes.
//
// JSON keys are the field names of ObjectInfo and DatasetInfo, plus
// compression_ratio (size_bytes / stored_bytes; null, "-" in text, when
// nothing is stored). filters is "none" for a dataset without filters.
// sparse is true or false ("yes" or "no" in text); defined_elements counts
// for dense datasets too: the elements of their stored chunks
// (Dataset::CountDefined).
// For a foreign store (an HDF5 or netCDF-4 file), what the store leaves
// out about the object -- its skipped attributes and, for a group, its
// skipped children -- follows: "skipped" in JSON, a list of
// {"path","reason"}, and "skipped: PATH: REASON" lines in text. A
// container's description has no such key.
// Numbers stay numbers where JSON can hold them: an unlimited max_shape
// dimension is null, and a non-finite float (nan, inf, -inf) is a string.
#ifndef SLABFS_TOOLS_DESCRIBE_H_
#define SLABFS_TOOLS_DESCRIBE_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "slabfs/container.h"
#include "slabfs/store.h"
#include "slabfs/types.h"

namespace slabfs::tools {

using Json = nlohmann::ordered_json;

struct Description {
  std::string path;
  ObjectInfo object;
  std::optional<DatasetInfo> dataset;  // for datasets
  std::vector<std::pair<std::string, Attribute>> attributes;
  bool foreign = false;                // the store is not a container
  std::vector<SkippedObject> skipped;  // for a foreign store (see above)
};

// Gathers everything about the object at `path` of a store.
Result<Description> Describe(const Store& store, std::string_view path);

// The object a skipped entry is about: "/a/b" of "/a/b attribute 'c'".
std::string_view SkippedOwner(const SkippedObject& s);
// "skipped: /a/b: variable-length string data".
std::string SkippedLine(const SkippedObject& s);

// One JSON object (see the file comment).
Json DescriptionToJson(const Description& d);
// "key: value" lines with the same keys as the JSON, then the attributes as
// "  name = value" lines.
std::string DescriptionToText(const Description& d);

// One element of type t (ItemSize(t) bytes, little-endian) as a JSON number,
// or as a string for a non-finite float.
Json ElementToJson(DType t, const void* element);
// A string attribute as a string, one number as a number, several as an array.
Json AttributeToJson(const Attribute& a);

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_DESCRIBE_H_
