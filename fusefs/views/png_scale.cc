#include "fusefs/views/png_scale.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace slabfs::fusefs::views {
namespace {

template <typename T>
double Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

// Calls fn(value) for each element of raw[0, n) as a double.
template <typename Fn>
void ForEachValue(DType dtype, const char* raw, size_t n, Fn&& fn) {
  const size_t isz = ItemSize(dtype);
  for (size_t i = 0; i < n; ++i) {
    const char* p = raw + i * isz;
    double v = 0;
    switch (dtype) {
      case DType::kI1: v = Load<int8_t>(p); break;
      case DType::kI2: v = Load<int16_t>(p); break;
      case DType::kI4: v = Load<int32_t>(p); break;
      case DType::kI8: v = Load<int64_t>(p); break;
      case DType::kU1: v = Load<uint8_t>(p); break;
      case DType::kU2: v = Load<uint16_t>(p); break;
      case DType::kU4: v = Load<uint32_t>(p); break;
      case DType::kU8: v = Load<uint64_t>(p); break;
      case DType::kF4: v = Load<float>(p); break;
      case DType::kF8: v = Load<double>(p); break;
    }
    fn(i, v);
  }
}

bool IsMissing(double v, std::span<const double> missing) {
  return std::find(missing.begin(), missing.end(), v) != missing.end();
}

}  // namespace

double Percentile(std::vector<double>& values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t n = values.size();
  // numpy: virtual index q/100 * (n - 1), then a lerp that is exact at
  // either end (b - (b - a) * (1 - t) from t = 0.5 on).
  const double pos = q / 100 * static_cast<double>(n - 1);
  const size_t k = std::min(static_cast<size_t>(std::floor(pos)), n - 1);
  const double t = pos - static_cast<double>(k);
  std::nth_element(values.begin(), values.begin() + k, values.end());
  const double a = values[k];
  if (k + 1 >= n) return a;
  const double b = *std::min_element(values.begin() + k + 1, values.end());
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

void CollectRangeValues(DType dtype, const char* raw, size_t n, std::span<const double> missing,
                        std::vector<double>& out) {
  ForEachValue(dtype, raw, n, [&](size_t, double v) {
    if (std::isfinite(v) && !IsMissing(v, missing)) out.push_back(v);
  });
}

PngScale ScaleFromValues(std::vector<double>& values, std::vector<double> missing) {
  PngScale s;
  s.missing = std::move(missing);
  if (!values.empty()) {
    s.lo = Percentile(values, kLowPercentile);
    s.hi = Percentile(values, kHighPercentile);
  }
  return s;
}

uint8_t LevelOf(double v, const PngScale& scale) {
  if (std::isnan(v) || IsMissing(v, scale.missing) || v <= scale.lo) return 0;
  if (v >= scale.hi) return 255;
  const double level = std::floor((v - scale.lo) / (scale.hi - scale.lo) * 255 + 0.5);
  return static_cast<uint8_t>(std::clamp(level, 0.0, 255.0));
}

void ToLevels(DType dtype, const char* raw, size_t n, const PngScale& scale, uint8_t* out) {
  ForEachValue(dtype, raw, n, [&](size_t i, double v) { out[i] = LevelOf(v, scale); });
}

SamplePlan PlanSample(uint64_t height, uint64_t width, uint64_t channels, uint64_t budget) {
  SamplePlan p;
  const uint64_t row_values = width * channels;
  if (height == 0 || row_values == 0 || height * row_values <= budget) return p;
  p.whole = false;
  const uint64_t bands = std::min(kSampleBands, height);
  const uint64_t per_band = std::max<uint64_t>(budget / bands, 1);
  if (row_values <= per_band) {
    p.band_rows = std::min(per_band / row_values, height / bands);
  } else {
    p.band_rows = 1;
    p.column_stride = (row_values + per_band - 1) / per_band;
  }
  // Evenly from the first row to the last; bands do not overlap because
  // bands * band_rows <= height.
  for (uint64_t i = 0; i < bands; ++i) {
    p.band_starts.push_back(bands == 1 ? 0 : (height - p.band_rows) * i / (bands - 1));
  }
  return p;
}

}  // namespace slabfs::fusefs::views
