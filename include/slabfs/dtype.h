// Element types (DType): their names, sizes, and one value as text or bytes.
#ifndef SLABFS_DTYPE_H_
#define SLABFS_DTYPE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "slabfs/status.h"

namespace slabfs {

// Element types, little-endian, spelled as numpy spells them ("f4", "u2").
enum class DType : unsigned char {
  kI1 = 1,
  kI2 = 2,
  kI4 = 3,
  kI8 = 4,
  kU1 = 5,
  kU2 = 6,
  kU4 = 7,
  kU8 = 8,
  kF4 = 9,
  kF8 = 10,
};

size_t ItemSize(DType t);             // 1, 2, 4 or 8
std::string_view DTypeName(DType t);  // "f4"
bool IsFloat(DType t);
bool IsSigned(DType t);
// Accepts "f4", "<f4", "float32", "int16", "uint8", ... Unknown names are
// InvalidArgument with a message listing the valid ones.
Result<DType> ParseDType(std::string_view name);
// Whether a raw byte is a valid DType code (for decoding untrusted bytes).
bool IsValidDTypeCode(unsigned code);

// Encodes one value given as text ("1.5", "-3", "nan", "0x10") as the
// little-endian bytes of an element of type t. Out-of-range or malformed
// text is InvalidArgument.
Result<std::string> EncodeScalar(DType t, std::string_view text);
// The text form of one element (shortest round-trip form for floats).
std::string FormatScalar(DType t, const void* element);

}  // namespace slabfs

#endif  // SLABFS_DTYPE_H_
