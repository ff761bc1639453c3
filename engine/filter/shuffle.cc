#include "engine/filter/shuffle.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace slabfs::engine {
namespace {

// The element size is a template parameter for the common sizes so the
// inner loops have fixed strides.
template <size_t K>
void ShuffleFixed(const char* in, size_t elements, char* out) {
  // Byte planes written one after another: sequential stores, and reads a
  // fixed stride apart that stay in the CPU's cache across planes.
  for (size_t b = 0; b < K; ++b) {
    const unsigned char* src = reinterpret_cast<const unsigned char*>(in) + b;
    unsigned char* dst = reinterpret_cast<unsigned char*>(out) + b * elements;
    for (size_t e = 0; e < elements; ++e) dst[e] = src[e * K];
  }
}

// Elements [from, elements) plane by plane: sequential reads, stores a
// fixed stride apart.
template <size_t K>
void UnshuffleTail(const char* in, size_t elements, size_t from, char* out) {
  for (size_t b = 0; b < K; ++b) {
    const unsigned char* src = reinterpret_cast<const unsigned char*>(in) + b * elements;
    unsigned char* dst = reinterpret_cast<unsigned char*>(out) + b;
    for (size_t e = from; e < elements; ++e) dst[e * K] = src[e];
  }
}

#if defined(__SSE2__)
// 16 elements at a time: 16 bytes from each plane, interleaved by SSE2's
// unpack steps (bytes, then pairs, then quads) into 16 whole elements.
// Every x86-64 CPU has SSE2. Undoing the shuffle of a deflated chunk took
// an eighth of a Zarr mount's CPU byte by byte; this is several times
// faster.
inline __m128i Load(const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline void Store(char* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

template <size_t K>
size_t UnshuffleVector(const char* in, size_t elements, char* out) {
  const size_t whole = elements - elements % 16;
  for (size_t e = 0; e < whole; e += 16) {
    char* dst = out + e * K;
    if constexpr (K == 2) {
      const __m128i p0 = Load(in + e), p1 = Load(in + elements + e);
      Store(dst, _mm_unpacklo_epi8(p0, p1));
      Store(dst + 16, _mm_unpackhi_epi8(p0, p1));
    } else {
      __m128i p[K];
      for (size_t b = 0; b < K; ++b) p[b] = Load(in + b * elements + e);
      // Byte pairs of planes (0,1), (2,3), ...: elements 0-7 and 8-15.
      __m128i lo8[K / 2], hi8[K / 2];
      for (size_t b = 0; b < K / 2; ++b) {
        lo8[b] = _mm_unpacklo_epi8(p[2 * b], p[2 * b + 1]);
        hi8[b] = _mm_unpackhi_epi8(p[2 * b], p[2 * b + 1]);
      }
      // Quads of bytes 0-3 (and 4-7): elements 0-3, 4-7, 8-11, 12-15.
      __m128i q[K / 4][4];
      for (size_t b = 0; b < K / 4; ++b) {
        q[b][0] = _mm_unpacklo_epi16(lo8[2 * b], lo8[2 * b + 1]);
        q[b][1] = _mm_unpackhi_epi16(lo8[2 * b], lo8[2 * b + 1]);
        q[b][2] = _mm_unpacklo_epi16(hi8[2 * b], hi8[2 * b + 1]);
        q[b][3] = _mm_unpackhi_epi16(hi8[2 * b], hi8[2 * b + 1]);
      }
      if constexpr (K == 4) {
        for (size_t j = 0; j < 4; ++j) Store(dst + 16 * j, q[0][j]);
      } else {  // K == 8: a quad of bytes 0-3 beside one of bytes 4-7
        for (size_t j = 0; j < 4; ++j) {
          Store(dst + 32 * j, _mm_unpacklo_epi32(q[0][j], q[1][j]));
          Store(dst + 32 * j + 16, _mm_unpackhi_epi32(q[0][j], q[1][j]));
        }
      }
    }
  }
  return whole;
}
#endif

template <size_t K>
void UnshuffleFixed(const char* in, size_t elements, char* out) {
  size_t done = 0;
#if defined(__SSE2__)
  done = UnshuffleVector<K>(in, elements, out);
#endif
  UnshuffleTail<K>(in, elements, done, out);
}

}  // namespace

void ShuffleBytes(const char* in, size_t n, size_t item_size, char* out) {
  if (n == 0) return;  // in and out may be null then (an empty decode step's scratch)
  if (item_size <= 1) {
    if (n > 0) std::memcpy(out, in, n);
    return;
  }
  const size_t elements = n / item_size;
  switch (item_size) {
    case 2: ShuffleFixed<2>(in, elements, out); break;
    case 4: ShuffleFixed<4>(in, elements, out); break;
    case 8: ShuffleFixed<8>(in, elements, out); break;
    default:
      for (size_t b = 0; b < item_size; ++b)
        for (size_t e = 0; e < elements; ++e) out[b * elements + e] = in[e * item_size + b];
  }
  std::memcpy(out + elements * item_size, in + elements * item_size, n - elements * item_size);
}

void UnshuffleBytes(const char* in, size_t n, size_t item_size, char* out) {
  if (n == 0) return;  // in and out may be null then (an empty decode step's scratch)
  if (item_size <= 1) {
    if (n > 0) std::memcpy(out, in, n);
    return;
  }
  const size_t elements = n / item_size;
  switch (item_size) {
    case 2: UnshuffleFixed<2>(in, elements, out); break;
    case 4: UnshuffleFixed<4>(in, elements, out); break;
    case 8: UnshuffleFixed<8>(in, elements, out); break;
    default:
      for (size_t b = 0; b < item_size; ++b)
        for (size_t e = 0; e < elements; ++e) out[e * item_size + b] = in[b * elements + e];
  }
  std::memcpy(out + elements * item_size, in + elements * item_size, n - elements * item_size);
}

}  // namespace slabfs::engine
