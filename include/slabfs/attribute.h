// Attributes: small named values on groups and datasets.
#ifndef SLABFS_ATTRIBUTE_H_
#define SLABFS_ATTRIBUTE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "slabfs/dtype.h"

namespace slabfs {

// A small named value on a group or dataset: a string, or a number or short
// array of numbers of one dtype.
struct Attribute {
  enum class Kind : unsigned char { kString = 0, kNumeric = 1 };
  Kind kind = Kind::kString;
  DType dtype = DType::kF8;  // for kNumeric
  std::string data;          // the string, or count * ItemSize(dtype) bytes

  static Attribute String(std::string s);
  static Attribute Integer(int64_t v);  // i8
  static Attribute Float(double v);     // f8
  static Attribute Numbers(DType t, std::string raw_bytes);

  uint64_t count() const;  // elements (1 for a string)
  // "m/s", "2.5", or "1,2,3".
  std::string ToText() const;
  // Infers the kind from text the way the CLI does: all-integer
  // comma-separated values are i8, all-numeric are f8, anything else a string.
  static Attribute FromText(std::string_view text);
};

// Attribute values are at most this many bytes.
constexpr size_t kMaxAttributeBytes = 64 * 1024;

}  // namespace slabfs

#endif  // SLABFS_ATTRIBUTE_H_
