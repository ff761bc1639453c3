// Small integer helpers shared by the engine.
#ifndef SLABFS_ENGINE_UTIL_MATH_H_
#define SLABFS_ENGINE_UTIL_MATH_H_

#include <cstdint>

namespace slabfs::engine {

// ceil(a / b) for b > 0, without overflow.
constexpr uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_MATH_H_
