// The NumPy .npy header: parsing an untrusted header and writing one the way
// numpy.save does.
//
// A .npy file is a preamble (magic "\x93NUMPY", a two-byte version, and a
// little-endian header length of 2 bytes in version 1.0 or 4 bytes in 2.0 and
// 3.0), then an ASCII Python dict literal with the keys 'descr',
// 'fortran_order' and 'shape', padded with spaces and a newline, then the
// array's bytes. Only what a slabfs dataset can hold is accepted: the
// little-endian types i1 i2 i4 i8 u1 u2 u4 u8 f4 f8, C order, rank 0 to 32.
//
// Every header is untrusted input: its length is bounded by
// kNpyMaxHeaderBytes, every field is checked, and the element count and byte
// size are checked for overflow. A malformed header is InvalidArgument; a
// well-formed header for data slabfs cannot hold (fortran_order True,
// big-endian, complex, structured, ...) is NotSupported. The functions are
// pure and thread-safe.
#ifndef SLABFS_NPY_H_
#define SLABFS_NPY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs {

inline constexpr std::string_view kNpyMagic{"\x93NUMPY", 6};
// Bytes before the dict: magic, version, and a 2- or 4-byte length.
inline constexpr size_t kNpyMaxPreambleBytes = 12;
// The largest whole header (preamble and dict) accepted. numpy writes a few
// hundred bytes even for rank 32 and refuses to read more than 10000.
inline constexpr size_t kNpyMaxHeaderBytes = 64 * 1024;

struct NpyHeader {
  DType dtype = DType::kU1;
  Dims shape;                 // empty for a 0-d array; may contain zeros
  uint64_t header_bytes = 0;  // the data starts at this offset
  uint64_t num_elements = 0;  // product of shape (1 for a 0-d array)
  uint64_t data_bytes = 0;    // num_elements * item size, below 2^63
};

// Whether bytes begin with the .npy magic.
bool HasNpyMagic(std::string_view prefix);

// The total header length (preamble, dict and padding: the data offset),
// from the first bytes of a file: at least kNpyMaxPreambleBytes of them, or
// the whole file if it is shorter. InvalidArgument for a bad magic, an
// unknown version, a truncated preamble or a length over kNpyMaxHeaderBytes.
Result<uint64_t> NpyHeaderLength(std::string_view prefix);

// Parses a complete header: `header` holds at least NpyHeaderLength() bytes
// (more are ignored). Fewer bytes is InvalidArgument ("truncated").
Result<NpyHeader> ParseNpyHeader(std::string_view header);

// The header numpy.save (format 1.0) writes for a C-order array, byte for
// byte: "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
// padded with spaces so that the data starts at a multiple of 64 bytes.
// Requires a rank of at most kMaxRank.
std::string EncodeNpyHeader(DType dtype, const Dims& shape);

// The numpy type string of a dtype: "<f4", "|u1".
std::string NpyDescr(DType dtype);

}  // namespace slabfs

#endif  // SLABFS_NPY_H_
