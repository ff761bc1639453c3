#include "engine/filter/shuffle.h"

#include <cstring>

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

template <size_t K>
void UnshuffleFixed(const char* in, size_t elements, char* out) {
  // Plane by plane: sequential reads, stores a fixed stride apart.
  for (size_t b = 0; b < K; ++b) {
    const unsigned char* src = reinterpret_cast<const unsigned char*>(in) + b * elements;
    unsigned char* dst = reinterpret_cast<unsigned char*>(out) + b;
    for (size_t e = 0; e < elements; ++e) dst[e * K] = src[e];
  }
}

}  // namespace

void ShuffleBytes(const char* in, size_t n, size_t item_size, char* out) {
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
