// The Zarr chunk decoders of `slab import` (tools/convert/zarr_codecs.h) on
// arbitrary chunk bytes, and the transpose that F order and v3's transpose
// codec need.
//
// Byte 0, bit 7 clear: a chunk. Bits 0-1 give the number of codecs (0-3);
// byte 1 their kinds, as base-5 digits in the order Zarr encodes (zlib,
// gzip, blosc, crc32c, shuffle); byte 2 the shuffle stride (bits 0-2), the
// blosc shuffle mode (bits 3-4) and the blosc compressor a re-encoding uses
// (bits 5-7); bytes 3-4 the chunk's expected size in bytes (little-endian).
// The rest is the stored chunk. A chunk that decodes must have exactly the
// expected size, and encoding it again with the same codecs must decode to
// the same bytes.
//
// Byte 0, bit 7 set: Untranspose. Byte 1 gives the rank (1-4) and the item
// size; then one byte per dimension (1-6 elements) and one for the
// permutation; the rest fills the input. The result is compared with a
// plain index computation.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tools/convert/zarr_codecs.h"

using namespace slabfs;
using namespace slabfs::tools::convert;

namespace {

constexpr size_t kStrides[] = {1, 2, 4, 8, 3, 5, 16, 255};
const char* const kCnames[] = {"lz4", "lz4hc", "blosclz", "zstd", "zlib", "lz4", "zstd", "zlib"};

void Chunk(const uint8_t* data, size_t size) {
  if (size < 5) return;
  const size_t count = data[0] & 3;
  std::vector<ZarrCodec> codecs;
  unsigned kinds = data[1];
  for (size_t i = 0; i < count; ++i, kinds /= 5) {
    ZarrCodec c;
    c.kind = static_cast<ZarrCodec::Kind>(kinds % 5);
    c.typesize = kStrides[data[2] & 7];
    c.shuffle = ((data[2] >> 3) & 3) % 3;
    c.cname = kCnames[data[2] >> 5];
    c.level = 1 + (data[2] >> 5);
    codecs.push_back(c);
  }
  const size_t expected = data[3] | (size_t{data[4]} << 8);
  const std::string_view stored(reinterpret_cast<const char*>(data) + 5, size - 5);
  std::string out;
  if (!DecodeChunk(codecs, stored, expected, "fuzz", &out).ok()) return;
  if (out.size() != expected) __builtin_trap();
  auto again = EncodeChunk(codecs, out);
  if (!again) return;  // a blosc compressor this c-blosc lacks
  std::string back;
  if (!DecodeChunk(codecs, *again, expected, "again", &back).ok() || back != out) __builtin_trap();
  SwapBytes(out.data(), out.size(), kStrides[data[2] & 7]);
}

void Transpose(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const size_t rank = 1 + (data[1] & 3);
  const size_t item = kStrides[(data[1] >> 2) & 3];
  if (size < 3 + rank) return;
  Dims shape(rank);
  uint64_t total = 1;
  for (size_t d = 0; d < rank; ++d) total *= shape[d] = 1 + data[2 + d] % 6;
  // The permutation: a Lehmer code read from one byte.
  std::vector<size_t> pool, order;
  for (size_t d = 0; d < rank; ++d) pool.push_back(d);
  unsigned code = data[2 + rank];
  for (size_t left = rank; left > 0; --left) {
    const size_t pick = code % left;
    code /= static_cast<unsigned>(left);
    order.push_back(pool[pick]);
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  const uint8_t* rest = data + 3 + rank;
  const size_t rest_size = size - 3 - rank;
  std::string in(total * item, '\0');
  for (size_t i = 0; rest_size > 0 && i < in.size(); ++i) in[i] = static_cast<char>(rest[i % rest_size]);
  std::string out(in.size(), '\x7f');
  Untranspose(in.data(), shape, order, item, out.data());
  // A[p] = B[q] with q[i] = p[order[i]], B of shape b[i] = shape[order[i]].
  Dims p(rank, 0);
  for (uint64_t a = 0; a < total; ++a) {
    uint64_t q = 0;
    for (size_t i = 0; i < rank; ++i) q = q * shape[order[i]] + p[order[i]];
    if (std::memcmp(out.data() + a * item, in.data() + q * item, item) != 0) __builtin_trap();
    for (size_t d = rank; d-- > 0;) {
      if (++p[d] < shape[d]) break;
      p[d] = 0;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 0x80) {
    Transpose(data, size);
  } else {
    Chunk(data, size);
  }
  return 0;
}
