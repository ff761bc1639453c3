// JSON as Zarr stores hold it, and Zarr attributes as slabfs attributes.
//
// Zarr metadata is JSON, but zarr-python writes .zattrs with Python's json
// module, which spells non-finite floats NaN, Infinity and -Infinity. The
// reader accepts them (as floats) and the writer produces them, so that an
// attribute such as {"missing": NaN} survives both ways.
#ifndef SLABFS_TOOLS_CONVERT_ZARR_JSON_H_
#define SLABFS_TOOLS_CONVERT_ZARR_JSON_H_

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::tools::convert {

using Json = nlohmann::json;

// Metadata documents larger than this are refused (a store's .zarray,
// .zattrs or zarr.json is a few KiB).
inline constexpr size_t kMaxMetadataBytes = 16u << 20;
// Deeper nesting than this is refused (the parser and the writer recurse).
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; Corruption naming `what` for bad JSON or nesting deeper
// than kMaxJsonDepth.
Result<Json> ParseJson(std::string_view text, std::string_view what);
// Reads and parses a metadata file (NotFound when it is missing,
// Corruption when it is larger than kMaxMetadataBytes or not JSON).
Result<Json> ReadJsonFile(const std::string& path);
// The text of `j` with 4-space indents, as zarr-python writes metadata:
// ASCII, other characters as \uXXXX escapes; non-finite floats as NaN,
// Infinity, -Infinity. Bytes of strings that are not UTF-8 (JSON text must
// be) are written as U+FFFD; never throws.
std::string DumpJson(const Json& j);
// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF).
bool IsUtf8(std::string_view s);

// One attribute value from Zarr JSON: a string stays a string; a number or
// boolean becomes a number (integers i8, or u8 above the i8 range; other
// numbers f8; booleans i1 0/1); a flat array of numbers (or of booleans)
// becomes a numeric array of that type; anything else (objects, null,
// arrays of strings, nested arrays) becomes a string holding its compact
// JSON text. InvalidArgument saying why when the value is over
// kMaxAttributeBytes.
Result<Attribute> AttributeFromJson(const Json& v);
// The JSON form of an attribute: a string, a number, or an array of numbers.
Json AttributeToJson(const Attribute& a);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_ZARR_JSON_H_
