#include "engine/filter/fletcher32.h"

namespace slabfs::engine {
namespace {

constexpr uint64_t kModulus = 65535;
// Words per block: sum2 grows by at most 2^16 * 2^20 * ... per block, far
// below 2^64, before both sums are reduced.
constexpr size_t kBlockWords = 1u << 20;

// A sum reduced modulo 65535, where a sum that is not zero but a multiple
// of 65535 stays 65535 (the end-around carry of a ones' complement sum).
uint32_t Reduce(uint64_t residue, bool nonzero) {
  if (!nonzero) return 0;
  return residue == 0 ? static_cast<uint32_t>(kModulus) : static_cast<uint32_t>(residue);
}

}  // namespace

uint32_t Fletcher32(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t words = n / 2;
  // Residues modulo 65535 and whether the true sums are nonzero: the words
  // are never negative, so a sum is nonzero once any word is.
  uint64_t sum1 = 0, sum2 = 0;
  bool any = false;
  while (words > 0) {
    const size_t block = words < kBlockWords ? words : kBlockWords;
    for (size_t i = 0; i < block; ++i, p += 2) {
      const uint32_t w = static_cast<uint32_t>(p[0]) << 8 | p[1];
      any = any || w != 0;
      sum1 += w;
      sum2 += sum1;
    }
    sum1 %= kModulus;
    sum2 %= kModulus;
    words -= block;
  }
  if (n % 2 != 0) {
    const uint32_t w = static_cast<uint32_t>(p[0]) << 8;
    any = any || w != 0;
    sum1 = (sum1 + w) % kModulus;
    sum2 = (sum2 + sum1) % kModulus;
  }
  return Reduce(sum2, any) << 16 | Reduce(sum1, any);
}

}  // namespace slabfs::engine
