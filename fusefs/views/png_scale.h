// How a .png view (png_view.h) turns array values into the 256 levels of
// a picture, and which values it looks at to choose the range. Pure
// functions: thread-safe.
//
// The range [lo, hi] is the 1st and the 99th percentile of the values
// that count (finite, and not one of the dataset's missing-value markers),
// as numpy.percentile computes them (the default linear interpolation
// between the two nearest sorted values). A value v becomes level
//   0                                   when v <= lo, -inf, NaN or missing
//   255                                 when v >= hi (not equal lo), +inf
//   floor((v - lo) / (hi - lo) * 255 + 0.5)  otherwise,
// computed in double (so a reader can check it with numpy's float64).
// With no value that counts, lo = hi = 0.
//
// Sample: a picture of at most kSampleValues values (channels counted) is
// read whole, once, and its range is exact. A larger one is sampled in
// kSampleBands bands of consecutive rows spread evenly from its first row
// to its last (consecutive rows touch few chunks), kSampleValues values in
// all; bands wider than that take every k-th column. Then the picture is
// read once more, in order, to encode it.
#ifndef SLABFS_FUSEFS_VIEWS_PNG_SCALE_H_
#define SLABFS_FUSEFS_VIEWS_PNG_SCALE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "slabfs/types.h"

namespace slabfs::fusefs::views {

inline constexpr double kLowPercentile = 1;
inline constexpr double kHighPercentile = 99;
inline constexpr uint64_t kSampleValues = uint64_t{1} << 20;
inline constexpr uint64_t kSampleBands = 16;

struct PngScale {
  double lo = 0;
  double hi = 0;
  std::vector<double> missing;  // values shown as level 0 (_FillValue, missing_value)
};

// numpy.percentile(values, q) (q in [0, 100]), linear method. Reorders
// `values`; NaN when it is empty.
double Percentile(std::vector<double>& values, double q);

// Appends the values of raw[0, n) (little-endian elements of `dtype`) that
// count for the range.
void CollectRangeValues(DType dtype, const char* raw, size_t n, std::span<const double> missing,
                        std::vector<double>& out);

// The scale from the values that count (reordered).
PngScale ScaleFromValues(std::vector<double>& values, std::vector<double> missing);

uint8_t LevelOf(double v, const PngScale& scale);

// The levels of raw[0, n).
void ToLevels(DType dtype, const char* raw, size_t n, const PngScale& scale, uint8_t* out);

// Which rows and columns of a height x width picture (channels values a
// pixel) the range is taken from.
struct SamplePlan {
  bool whole = true;                  // all of it (then the rest is unused)
  std::vector<uint64_t> band_starts;  // first row of each band, ascending, disjoint
  uint64_t band_rows = 0;
  uint64_t column_stride = 1;  // every k-th pixel of a row
};
SamplePlan PlanSample(uint64_t height, uint64_t width, uint64_t channels, uint64_t budget = kSampleValues);

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_PNG_SCALE_H_
