// Shapes: Dims, the unlimited dimension, and shapes as text.
#ifndef SLABFS_DIMS_H_
#define SLABFS_DIMS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"

// 128-bit integers for overflow-safe size arithmetic (GNU extension).
__extension__ typedef unsigned __int128 slabfs_u128;
__extension__ typedef __int128 slabfs_i128;

namespace slabfs {

constexpr int kMaxRank = 32;
// A max-shape dimension that can grow without bound.
constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

using Dims = std::vector<uint64_t>;

// "2000,2000" -> {2000, 2000}; "unlimited" (or "u", "none") gives kUnlimited
// when allow_unlimited. Zero (unless allow_zero), negative, empty or
// malformed entries are InvalidArgument.
Result<Dims> ParseDims(std::string_view text, bool allow_unlimited = false, bool allow_zero = false);
// {2000, 2000} -> "2000,2000"; kUnlimited prints as "unlimited".
std::string FormatDims(const Dims& dims);

}  // namespace slabfs

#endif  // SLABFS_DIMS_H_
