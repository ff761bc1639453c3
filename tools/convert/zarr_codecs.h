// The byte codecs of Zarr chunks, as thin wrappers over libdeflate (zlib
// and gzip streams) and c-blosc 1.x, plus CRC-32C, byte swapping and the
// transpose that Zarr's F order and v3 `transpose` codec need.
//
// Decoders take untrusted bytes: each one produces exactly the size the
// caller expects or fails with Corruption naming `what` (the chunk's key);
// none reads past its input or writes past its output.
#ifndef SLABFS_TOOLS_CONVERT_ZARR_CODECS_H_
#define SLABFS_TOOLS_CONVERT_ZARR_CODECS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::tools::convert {

// One bytes -> bytes codec of a Zarr chunk: v2's compressor or a v2 filter
// (numcodecs' byte "shuffle"), or one of v3's bytes-to-bytes codecs.
struct ZarrCodec {
  enum class Kind { kZlib, kGzip, kBlosc, kCrc32c, kShuffle };
  Kind kind = Kind::kZlib;
  int level = 1;      // zlib/gzip level, blosc clevel (0-9)
  std::string cname;  // blosc: lz4, lz4hc, blosclz, zstd, zlib, snappy
  // blosc: 0 none, 1 byte shuffle, 2 bit shuffle (v2's -1, automatic, is
  // resolved by the parser with the element size).
  int shuffle = 0;
  size_t typesize = 1;  // blosc and shuffle: the shuffle stride
};

// Encodes `raw` with the codecs in order (as Zarr writes a chunk).
// NotSupported when blosc lacks the named compressor or the chunk is over
// blosc's 2 GiB limit.
Result<std::string> EncodeChunk(const std::vector<ZarrCodec>& codecs, std::string raw);

// Decodes stored chunk bytes with the codecs in reverse order into exactly
// `expected` bytes (the chunk's elements) at out; any chain of codecs,
// several compressors included. The steps between work in this thread's
// scratch buffers (engine/filter/decode_scratch.h), and the last one
// writes into `out`. Corruption naming `what` for a damaged, truncated or
// wrong-sized chunk or a CRC-32C mismatch (out's bytes are then undefined).
// Memory stays within a small multiple of `expected` whatever the input
// claims.
Status DecodeChunk(const std::vector<ZarrCodec>& codecs, std::string_view stored, size_t expected,
                   std::string_view what, char* out);
// The same into *out, which is left alone unless the chunk decodes.
Status DecodeChunk(const std::vector<ZarrCodec>& codecs, std::string_view stored, size_t expected,
                   std::string_view what, std::string* out);

// Reverses the byte order of every element of `item_size` bytes in place.
void SwapBytes(char* data, size_t n, size_t item_size);

// Zarr's transpose: `in` holds a chunk array B of shape b_shape[i] =
// a_shape[order[i]] in C order, where `order` is a permutation of
// 0..rank-1; writes the chunk array A (shape a_shape, C order) to `out`,
// with A[p] = B[q] where q[i] = p[order[i]]. v2's F order is the order
// rank-1, ..., 0.
void Untranspose(const char* in, const Dims& a_shape, const std::vector<size_t>& order, size_t item_size, char* out);
// The inverse: the chunk array A (shape a_shape, C order) at `in` written
// as B to `out`, as a writer stores a transposed chunk.
void Transpose(const char* in, const Dims& a_shape, const std::vector<size_t>& order, size_t item_size, char* out);

// Whether c-blosc was built with compressor `cname`.
bool BloscHasCompressor(std::string_view cname);

}  // namespace slabfs::tools::convert

#endif  // SLABFS_TOOLS_CONVERT_ZARR_CODECS_H_
