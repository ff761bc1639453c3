#include "tools/convert/zarr_codecs.h"

#include <blosc.h>
#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "engine/filter/decode_scratch.h"
#include "engine/filter/deflate_pool.h"
#include "engine/filter/shuffle.h"
#include "slabfs/checksum.h"

namespace slabfs::tools::convert {
namespace {

Result<libdeflate_compressor*> CompressorFor(int level) {
  libdeflate_compressor* c = engine::ThreadCompressor(level);
  if (!c) return Err(Status::IOError(fmt::format("no memory for a level-{} compressor", level)));
  return c;
}

Result<libdeflate_decompressor*> Decompressor() {
  libdeflate_decompressor* d = engine::ThreadDecompressor();
  if (!d) return Err(Status::IOError("no memory for a decompressor"));
  return d;
}

Result<std::string> Deflate(bool gzip, int level, const std::string& in) {
  SLABFS_ASSIGN_OR_RETURN(libdeflate_compressor * z, CompressorFor(level));
  const size_t bound =
      gzip ? libdeflate_gzip_compress_bound(z, in.size()) : libdeflate_zlib_compress_bound(z, in.size());
  std::string out(bound, '\0');
  const size_t n = gzip ? libdeflate_gzip_compress(z, in.data(), in.size(), out.data(), bound)
                        : libdeflate_zlib_compress(z, in.data(), in.size(), out.data(), bound);
  if (n == 0) return Err(Status::IOError("deflate failed within its own bound"));
  out.resize(n);
  return out;
}

// The size a codec's output must have when decoded: exactly `exact` when
// the codecs applied before it keep sizes known (only a checksum did), else
// at most `most` (the bound of what those codecs can make of the chunk).
struct DecodedSize {
  std::optional<size_t> exact;
  size_t most = 0;
};

// Inflates a whole zlib or gzip stream into `room` bytes at dst (exactly
// size.exact when known); the stream must end where the input does. Sets
// *made to the bytes it decoded.
Status Inflate(bool gzip, std::string_view in, DecodedSize size, std::string_view what, char* dst, size_t room,
               size_t* made) {
  SLABFS_ASSIGN_OR_RETURN(libdeflate_decompressor * z, Decompressor());
  size_t used = 0;
  const libdeflate_result rc = gzip ? libdeflate_gzip_decompress_ex(z, in.data(), in.size(), dst, room, &used, made)
                                    : libdeflate_zlib_decompress_ex(z, in.data(), in.size(), dst, room, &used, made);
  const char* kind = gzip ? "gzip" : "zlib";
  if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
    return Status::Corruption(
        fmt::format("{}: the {} stream holds more than the {} bytes it can hold here", what, kind, room));
  }
  if (rc != LIBDEFLATE_SUCCESS) {
    return Status::Corruption(fmt::format("{}: the {} stream is damaged or truncated", what, kind));
  }
  if (size.exact && *made != *size.exact) {
    return Status::Corruption(
        fmt::format("{}: the {} stream decodes to {} bytes, not the chunk's {}", what, kind, *made, *size.exact));
  }
  if (used != in.size()) {
    return Status::Corruption(
        fmt::format("{}: {} bytes follow the end of the {} stream", what, in.size() - used, kind));
  }
  return Status::OK();
}

Result<std::string> BloscEncode(const ZarrCodec& c, const std::string& in) {
  if (in.size() > BLOSC_MAX_BUFFERSIZE) {
    return Err(Status::NotSupported(
        fmt::format("a chunk of {} bytes is over blosc's limit of {} bytes", in.size(), BLOSC_MAX_BUFFERSIZE)));
  }
  if (!BloscHasCompressor(c.cname)) {
    return Err(Status::NotSupported(fmt::format("this c-blosc has no '{}' compressor", c.cname)));
  }
  std::string out(in.size() + BLOSC_MAX_OVERHEAD, '\0');
  const int n = blosc_compress_ctx(c.level, c.shuffle, std::max<size_t>(1, c.typesize), in.size(), in.data(),
                                   out.data(), out.size(), c.cname.c_str(), 0, 1);
  if (n <= 0) return Err(Status::IOError(fmt::format("blosc ({}) failed to compress", c.cname)));
  out.resize(static_cast<size_t>(n));
  return out;
}

// The bytes a blosc stream decodes to, checked against its header and
// `size`, before anything is decoded.
Result<size_t> BloscDecodedBytes(std::string_view in, DecodedSize size, std::string_view what) {
  if (in.size() < BLOSC_MIN_HEADER_LENGTH) {
    return Err(Status::Corruption(fmt::format("{}: {} bytes are too short for a blosc header", what, in.size())));
  }
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  blosc_cbuffer_sizes(in.data(), &nbytes, &cbytes, &blocksize);
  if (cbytes != in.size()) {
    return Err(Status::Corruption(fmt::format("{}: the blosc header says {} compressed bytes but the chunk holds {}{}",
                                              what, cbytes, in.size(), cbytes > in.size() ? " (truncated)" : "")));
  }
  size_t validated = 0;
  if (blosc_cbuffer_validate(in.data(), in.size(), &validated) < 0 || validated != nbytes) {
    return Err(Status::Corruption(fmt::format("{}: the blosc header is damaged", what)));
  }
  if (size.exact && nbytes != *size.exact) {
    return Err(Status::Corruption(
        fmt::format("{}: the blosc stream decodes to {} bytes, not the chunk's {}", what, nbytes, *size.exact)));
  }
  if (nbytes > size.most) {
    return Err(Status::Corruption(fmt::format(
        "{}: the blosc stream decodes to {} bytes, more than the {} it can hold here", what, nbytes, size.most)));
  }
  return nbytes;
}

Status BloscDecode(std::string_view in, size_t nbytes, std::string_view what, char* dst) {
  if (nbytes == 0) return Status::OK();
  const int n = blosc_decompress_ctx(in.data(), dst, nbytes, 1);
  if (n < 0 || static_cast<size_t>(n) != nbytes) {
    return Status::Corruption(fmt::format("{}: the blosc stream is damaged", what));
  }
  return Status::OK();
}

}  // namespace

bool BloscHasCompressor(std::string_view cname) { return blosc_compname_to_compcode(std::string(cname).c_str()) >= 0; }

// numcodecs' Shuffle, the byte shuffle of the filter pipeline.
std::string ByteShuffle(std::string_view in, size_t stride, bool inverse) {
  std::string out(in.size(), '\0');
  if (inverse) {
    engine::UnshuffleBytes(in.data(), in.size(), stride, out.data());
  } else {
    engine::ShuffleBytes(in.data(), in.size(), stride, out.data());
  }
  return out;
}

Result<std::string> EncodeChunk(const std::vector<ZarrCodec>& codecs, std::string raw) {
  std::string cur = std::move(raw);
  for (const ZarrCodec& c : codecs) {
    switch (c.kind) {
      case ZarrCodec::Kind::kZlib:
      case ZarrCodec::Kind::kGzip: {
        SLABFS_ASSIGN_OR_RETURN(cur, Deflate(c.kind == ZarrCodec::Kind::kGzip, c.level, cur));
        break;
      }
      case ZarrCodec::Kind::kBlosc: {
        SLABFS_ASSIGN_OR_RETURN(cur, BloscEncode(c, cur));
        break;
      }
      case ZarrCodec::Kind::kCrc32c: {
        const uint32_t crc = Crc32c(cur.data(), cur.size());
        for (int i = 0; i < 4; ++i) cur.push_back(static_cast<char>(crc >> (8 * i)));
        break;
      }
      case ZarrCodec::Kind::kShuffle: cur = ByteShuffle(cur, c.typesize, /*inverse=*/false); break;
    }
  }
  return cur;
}

Status DecodeChunk(const std::vector<ZarrCodec>& codecs, std::string_view stored, size_t expected,
                   std::string_view what, char* out) {
  // The size of each codec's input when the chunk was encoded: exact where
  // only checksums and shuffles came before it, else bounded by what the
  // compressors before it can make of the chunk at worst. A compressor's
  // decoder needs it.
  std::vector<DecodedSize> size_in(codecs.size());
  DecodedSize s{expected, expected};
  for (size_t i = 0; i < codecs.size(); ++i) {
    size_in[i] = s;
    const size_t most = s.most;
    switch (codecs[i].kind) {
      case ZarrCodec::Kind::kCrc32c:
        if (s.exact) *s.exact += 4;
        s.most = most + 4;
        break;
      case ZarrCodec::Kind::kShuffle: break;
      case ZarrCodec::Kind::kZlib:
      case ZarrCodec::Kind::kGzip:
        // Stored blocks at worst: 5 bytes per block of at least 16 KiB, and
        // a header and trailer, with room to spare.
        s.exact.reset();
        s.most = most + most / 1024 + 1024;
        break;
      case ZarrCodec::Kind::kBlosc:
        s.exact.reset();
        s.most = most + BLOSC_MAX_OVERHEAD;
        break;
    }
  }
  // Each step writes into this thread's scratch buffers, the last one that
  // changes the bytes straight into `out` (engine/filter/decode_scratch.h):
  // nothing is allocated or zero-filled per chunk.
  const size_t last = engine::LastTransformingStep(codecs.size(), [&](size_t i) {
    const ZarrCodec& c = codecs[i];
    return c.kind != ZarrCodec::Kind::kCrc32c && !(c.kind == ZarrCodec::Kind::kShuffle && c.typesize <= 1);
  });
  engine::DecodeDestinations dest(out, expected, last);
  std::string_view cur = stored;
  for (size_t i = codecs.size(); i-- > 0;) {
    const ZarrCodec& c = codecs[i];
    switch (c.kind) {
      case ZarrCodec::Kind::kCrc32c: {
        if (cur.size() < 4) {
          return Status::Corruption(fmt::format("{}: {} bytes are too short for a CRC-32C", what, cur.size()));
        }
        const size_t body = cur.size() - 4;
        uint32_t want = 0;
        for (int k = 0; k < 4; ++k) want |= uint32_t{static_cast<unsigned char>(cur[body + k])} << (8 * k);
        if (Crc32c(cur.data(), body) != want) {
          return Status::Corruption(fmt::format("{}: CRC-32C mismatch", what));
        }
        cur = cur.substr(0, body);
        break;
      }
      case ZarrCodec::Kind::kZlib:
      case ZarrCodec::Kind::kGzip: {
        const size_t room = size_in[i].exact.value_or(size_in[i].most);
        char* dst = dest(i, room);
        size_t made = 0;
        SLABFS_RETURN_IF_ERROR(Inflate(c.kind == ZarrCodec::Kind::kGzip, cur, size_in[i], what, dst, room, &made));
        cur = std::string_view(dst, made);
        break;
      }
      case ZarrCodec::Kind::kBlosc: {
        SLABFS_ASSIGN_OR_RETURN(size_t nbytes, BloscDecodedBytes(cur, size_in[i], what));
        char* dst = dest(i, nbytes);
        SLABFS_RETURN_IF_ERROR(BloscDecode(cur, nbytes, what, dst));
        cur = std::string_view(dst, nbytes);
        break;
      }
      case ZarrCodec::Kind::kShuffle: cur = dest.Unshuffle(i, cur, c.typesize); break;
    }
  }
  if (cur.size() != expected) {
    return Status::Corruption(
        fmt::format("{}: the chunk holds {} bytes, not the {} its shape needs", what, cur.size(), expected));
  }
  dest.Finish(cur);
  return Status::OK();
}

Status DecodeChunk(const std::vector<ZarrCodec>& codecs, std::string_view stored, size_t expected,
                   std::string_view what, std::string* out) {
  std::string decoded(expected, '\0');
  SLABFS_RETURN_IF_ERROR(DecodeChunk(codecs, stored, expected, what, decoded.data()));
  out->swap(decoded);
  return Status::OK();
}

void SwapBytes(char* data, size_t n, size_t item_size) {
  switch (item_size) {
    case 2:
      for (size_t i = 0; i + 2 <= n; i += 2) {
        uint16_t v;
        std::memcpy(&v, data + i, 2);
        v = __builtin_bswap16(v);
        std::memcpy(data + i, &v, 2);
      }
      break;
    case 4:
      for (size_t i = 0; i + 4 <= n; i += 4) {
        uint32_t v;
        std::memcpy(&v, data + i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(data + i, &v, 4);
      }
      break;
    case 8:
      for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v;
        std::memcpy(&v, data + i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(data + i, &v, 8);
      }
      break;
    default:
      for (size_t i = 0; item_size > 1 && i + item_size <= n; i += item_size) {
        std::reverse(data + i, data + i + item_size);
      }
  }
}

namespace {

// Walks A (C order over a_shape) row by row with the offset in B of each
// element; copies B to A (untranspose) or A to B (transpose).
void Permute(const char* in, const Dims& a_shape, const std::vector<size_t>& order, size_t item_size, char* out,
             bool a_to_b) {
  const size_t rank = a_shape.size();
  if (rank == 0) return;
  // Element strides of B (C order over b_shape), then the stride in B of a
  // step along each dimension of A: q[i] = p[order[i]].
  Dims b_stride(rank);
  uint64_t s = 1;
  for (size_t i = rank; i-- > 0;) {
    b_stride[i] = s;
    s *= a_shape[order[i]];
  }
  Dims a_step(rank);
  for (size_t i = 0; i < rank; ++i) a_step[order[i]] = b_stride[i];
  uint64_t total = 1;
  for (uint64_t n : a_shape) total *= n;
  if (total == 0) return;
  Dims p(rank, 0);
  uint64_t q = 0;  // the offset in B of position p of A
  const uint64_t inner = a_shape[rank - 1];
  const uint64_t inner_step = a_step[rank - 1];
  for (uint64_t done = 0; done < total; done += inner) {
    uint64_t from = q;
    char* dst = out + done * item_size;
    if (a_to_b) {
      const char* src = in + done * item_size;
      for (uint64_t k = 0; k < inner; ++k, from += inner_step) {
        std::memcpy(out + from * item_size, src + k * item_size, item_size);
      }
    } else {
      for (uint64_t k = 0; k < inner; ++k, from += inner_step) {
        std::memcpy(dst + k * item_size, in + from * item_size, item_size);
      }
    }
    // Next row of A: carry through the outer dimensions.
    for (size_t d = rank - 1; d-- > 0;) {
      if (++p[d] < a_shape[d]) {
        q += a_step[d];
        break;
      }
      q -= a_step[d] * (a_shape[d] - 1);
      p[d] = 0;
    }
  }
}

}  // namespace

void Untranspose(const char* in, const Dims& a_shape, const std::vector<size_t>& order, size_t item_size, char* out) {
  Permute(in, a_shape, order, item_size, out, /*a_to_b=*/false);
}

void Transpose(const char* in, const Dims& a_shape, const std::vector<size_t>& order, size_t item_size, char* out) {
  Permute(in, a_shape, order, item_size, out, /*a_to_b=*/true);
}

}  // namespace slabfs::tools::convert
