#include "fusefs/views/png_view.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "fusefs/log.h"
#include "fusefs/views/colormap.h"
#include "slabfs/slice.h"

namespace slabfs::fusefs::views {
namespace {

// Raw bytes read from the dataset at once while encoding.
constexpr uint64_t kBatchBytes = uint64_t{4} << 20;
constexpr const char* kColormapAttribute = "colormap";

std::string ShapeText(const Dims& shape) { return fmt::format("({})", fmt::join(shape, ", ")); }

// The first value of a numeric attribute, if there is one.
std::optional<double> NumericAttribute(const Store& c, ObjectId id, std::string_view name) {
  auto a = c.GetAttribute(id, name);
  if (!a || a->kind != Attribute::Kind::kNumeric || a->count() == 0) return std::nullopt;
  std::vector<double> v;
  CollectRangeValues(a->dtype, a->data.data(), 1, {}, v);
  if (v.empty()) return std::nullopt;  // a NaN marker: NaN is missing anyway
  return v[0];
}

// Reads the rows [r0, r0 + nrows) and every `cstride`-th pixel of the
// columns from c0 on (ncols of them), all channels, as a dense array.
Status ReadBlock(const FileData& ds, const ViewLayout& v, const PictureShape& p, uint64_t r0, uint64_t nrows,
                 uint64_t c0, uint64_t ncols, uint64_t cstride, char* out) {
  Slab sub = v.sel;
  DimSlab& r = sub.dims[p.row_dim];
  const DimSlab& rin = v.sel.dims[p.row_dim];
  r.start = rin.start + r0 * rin.stride;
  r.count = nrows;
  r.stride = nrows <= 1 ? 1 : rin.stride;
  DimSlab& c = sub.dims[p.col_dim];
  const DimSlab& cin = v.sel.dims[p.col_dim];
  c.start = cin.start + c0 * cin.stride;
  c.count = ncols;
  c.stride = ncols <= 1 ? 1 : cin.stride * cstride;
  return ds.Read(sub, out);
}

// The range from the plan's sample (or the whole picture, which is then
// kept in `whole` for the encoder).
Result<PngScale> Scale(const FileData& ds, const ViewLayout& v, const PictureShape& p, const PictureOptions& o,
                       const SamplePlan& plan, std::vector<char>& whole, uint64_t& sampled) {
  const uint64_t isz = ItemSize(v.dtype);
  const uint64_t row_values = p.width * p.channels;
  std::vector<double> values;
  sampled = 0;
  if (plan.whole) {
    whole.resize(p.height * row_values * isz);
    SLABFS_RETURN_IF_ERROR_R(ReadBlock(ds, v, p, 0, p.height, 0, p.width, 1, whole.data()));
    sampled = p.height * row_values;
    CollectRangeValues(v.dtype, whole.data(), sampled, o.missing, values);
  } else {
    const uint64_t ncols = (p.width + plan.column_stride - 1) / plan.column_stride;
    std::vector<char> band(plan.band_rows * ncols * p.channels * isz);
    values.reserve(kSampleValues);
    for (uint64_t start : plan.band_starts) {
      SLABFS_RETURN_IF_ERROR_R(ReadBlock(ds, v, p, start, plan.band_rows, 0, ncols, plan.column_stride, band.data()));
      const uint64_t n = plan.band_rows * ncols * p.channels;
      sampled += n;
      CollectRangeValues(v.dtype, band.data(), n, o.missing, values);
    }
  }
  return ScaleFromValues(values, o.missing);
}

std::string Describe(const ViewLayout& v, const PictureShape& p, const PictureOptions& o, const PngScale& s,
                     bool as_stored, uint64_t sampled) {
  const std::string kind = p.channels == 3 ? "RGB" : p.channels == 4 ? "RGBA" : "colormap " + o.colormap;
  if (as_stored)
    return fmt::format("slabfs: {} view of shape {}, {}, values as stored", DTypeName(v.dtype), ShapeText(v.shape),
                       kind);
  const bool exact = sampled == p.height * p.width * p.channels;
  return fmt::format(
      "slabfs: {} view of shape {}, {}; levels 0..255 span [{:.17g}, {:.17g}], the 1st and 99th "
      "percentiles of the finite values of {} ({} values); NaN, -inf and missing values are 0, inf is 255",
      DTypeName(v.dtype), ShapeText(v.shape), kind, s.lo, s.hi, exact ? "the whole picture" : "a sample", sampled);
}

}  // namespace

Result<PictureShape> PictureOf(const Dims& shape) {
  PictureShape p;
  size_t rank = shape.size();
  if (rank >= 3 && (shape[rank - 1] == 3 || shape[rank - 1] == 4)) {
    p.channels = static_cast<unsigned>(shape[rank - 1]);
    --rank;  // the rest is the picture's rows and columns
  }
  std::vector<size_t> wide;  // dimensions of the rest with an extent other than 1
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] != 1) wide.push_back(d);
  }
  if (rank < 2 || wide.size() > 2) {
    return Err(Status::NotFound(
        fmt::format("a view of shape {} has no picture: a picture is a view with at most two dimensions of an extent "
                    "other than 1 (rows, columns), and a last dimension of 3 or 4 for RGB(A); name a slice such as "
                    "ds[3].png",
                    ShapeText(shape))));
  }
  if (wide.size() == 2) {
    p.row_dim = wide[0];
    p.col_dim = wide[1];
  } else if (wide.size() == 1 && wide[0] != rank - 1) {
    p.row_dim = wide[0];  // a column
    p.col_dim = rank - 1;
  } else {
    p.row_dim = rank - 2;  // a row, or a single pixel
    p.col_dim = rank - 1;
  }
  p.height = shape[p.row_dim];
  p.width = shape[p.col_dim];
  if (p.height == 0 || p.width == 0) {
    return Err(Status::InvalidArgument(fmt::format("a view of shape {} is an empty picture", ShapeText(shape))));
  }
  if (p.height > kMaxPictureSide || p.width > kMaxPictureSide || p.height > kMaxPicturePixels / p.width) {
    return Err(Status::OutOfRange(
        fmt::format("a picture of {} x {} pixels is too large: slabfs makes pictures of at most {} pixels a side and "
                    "{} pixels in all (PNG allows {} a side); name a slice, e.g. ds[::4, ::4].png",
                    p.width, p.height, kMaxPictureSide, kMaxPicturePixels, kPngMaxSide)));
  }
  return p;
}

Result<PictureOptions> PictureOptionsOf(const Store& c, ObjectId dataset) {
  PictureOptions o;
  auto cmap = c.GetAttribute(dataset, kColormapAttribute);
  if (cmap) {
    o.colormap = cmap->kind == Attribute::Kind::kString ? cmap->data : cmap->ToText();
    if (!NamedColormap(o.colormap)) {
      return Err(Status::InvalidArgument(fmt::format("the attribute {}='{}' names no colormap (known: {})",
                                                     kColormapAttribute, o.colormap, KnownColormaps())));
    }
  }
  for (const char* name : {"_FillValue", "missing_value"}) {
    if (auto v = NumericAttribute(c, dataset, name)) o.missing.push_back(*v);
  }
  return o;
}

Result<std::shared_ptr<const SpillBuffer>> EncodePicture(const FileData& ds, const ViewLayout& v, const PictureShape& p,
                                                         const PictureOptions& o) {
  const uint64_t isz = ItemSize(v.dtype);
  const uint64_t row_values = p.width * p.channels;
  const bool as_stored = p.channels > 1 && v.dtype == DType::kU1;

  std::vector<char> whole;
  uint64_t sampled = 0;
  PngScale scale{.lo = 0, .hi = 255, .missing = {}};
  const SamplePlan plan = as_stored ? SamplePlan{} : PlanSample(p.height, p.width, p.channels);
  if (!as_stored) {
    SLABFS_ASSIGN_OR_RETURN(scale, Scale(ds, v, p, o, plan, whole, sampled));
  }

  PngHeader h;
  h.width = static_cast<uint32_t>(p.width);
  h.height = static_cast<uint32_t>(p.height);
  h.color = p.channels == 3 ? PngColor::kRgb : p.channels == 4 ? PngColor::kRgba : PngColor::kGray;
  if (p.channels == 1 && o.colormap != "gray") {
    h.color = PngColor::kPalette;
    h.palette = NamedColormap(o.colormap);
    if (!h.palette) return Err(Status::InvalidArgument(fmt::format("no colormap named '{}'", o.colormap)));
  }
  h.text.emplace_back("Software", "slabfs");
  h.text.emplace_back("Description", Describe(v, p, o, scale, as_stored, sampled));

  auto out = std::make_shared<SpillBuffer>();
  SLABFS_ASSIGN_OR_RETURN(auto enc,
                          PngEncoder::Start(h, [&out](const uint8_t* d, size_t n) { return out->Append(d, n); }));
  std::vector<uint8_t> levels(row_values);
  if (!whole.empty()) {  // the sample was the picture
    for (uint64_t r = 0; r < p.height; ++r) {
      ToLevels(v.dtype, whole.data() + r * row_values * isz, row_values, scale, levels.data());
      SLABFS_RETURN_IF_ERROR_R(enc->WriteRow(levels.data()));
    }
  } else if (row_values * isz <= kBatchBytes) {  // batches of whole rows
    const uint64_t batch_rows = std::max<uint64_t>(1, kBatchBytes / (row_values * isz));
    std::vector<char> raw(std::min(batch_rows, p.height) * row_values * isz);
    for (uint64_t r0 = 0; r0 < p.height; r0 += batch_rows) {
      const uint64_t n = std::min(batch_rows, p.height - r0);
      SLABFS_RETURN_IF_ERROR_R(ReadBlock(ds, v, p, r0, n, 0, p.width, 1, raw.data()));
      for (uint64_t r = 0; r < n; ++r) {
        ToLevels(v.dtype, raw.data() + r * row_values * isz, row_values, scale, levels.data());
        SLABFS_RETURN_IF_ERROR_R(enc->WriteRow(levels.data()));
      }
    }
  } else {  // rows wider than a batch: each row in pieces
    const uint64_t piece = std::max<uint64_t>(1, kBatchBytes / (p.channels * isz));
    std::vector<char> raw(piece * p.channels * isz);
    for (uint64_t r = 0; r < p.height; ++r) {
      for (uint64_t c0 = 0; c0 < p.width; c0 += piece) {
        const uint64_t n = std::min(piece, p.width - c0);
        SLABFS_RETURN_IF_ERROR_R(ReadBlock(ds, v, p, r, 1, c0, n, 1, raw.data()));
        ToLevels(v.dtype, raw.data(), n * p.channels, scale, levels.data() + c0 * p.channels);
      }
      SLABFS_RETURN_IF_ERROR_R(enc->WriteRow(levels.data()));
    }
  }
  SLABFS_RETURN_IF_ERROR_R(enc->Finish());
  SLABFS_RETURN_IF_ERROR_R(out->Finish());
  return std::shared_ptr<const SpillBuffer>(std::move(out));
}

Result<std::shared_ptr<const SpillBuffer>> PngCache::Get(ObjectId dataset, const std::string& selection,
                                                         const std::string& stamp, const Encode& encode) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard lock(mu_);
    Slot& slot = slots_[Key{dataset, selection}];
    if (!slot.entry) slot.entry = std::make_shared<Entry>();
    slot.last_use = ++clock_;
    e = slot.entry;
    while (slots_.size() > kMaxEntries) {
      auto oldest = std::min_element(slots_.begin(), slots_.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      slots_.erase(oldest);  // an encoder of it holds its own reference
    }
  }
  std::lock_guard lock(e->mu);
  if (e->png && e->stamp == stamp) return e->png;
  e->png.reset();  // the old picture goes now, not at the next change
  SLABFS_ASSIGN_OR_RETURN(auto png, encode());
  e->png = png;
  e->stamp = stamp;
  return png;
}

size_t PngCache::size() {
  std::lock_guard lock(mu_);
  return slots_.size();
}

Status AttachPicture(PngCache& cache, const Store& c, const FileData& ds, timespec mtime, ViewLayout& v) {
  SLABFS_ASSIGN_OR_RETURN(PictureShape p, PictureOf(v.shape));
  SLABFS_ASSIGN_OR_RETURN(PictureOptions o, PictureOptionsOf(c, ds.id()));
  const DatasetInfo info = ds.info();
  const std::string stamp = fmt::format("{}.{:09}|{}|{}|{}", mtime.tv_sec, mtime.tv_nsec, fmt::join(info.shape, ","),
                                        o.colormap, fmt::join(o.missing, ","));
  SLABFS_ASSIGN_OR_RETURN(auto png, cache.Get(ds.id(), FormatSlice(v.sel), stamp, [&]() {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = EncodePicture(ds, v, p, o);
    if (r) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
      Log().debug("picture of dataset {} [{}]: {} x {}, {} bytes{} in {} ms", ds.id(), FormatSlice(v.sel), p.width,
                  p.height, (*r)->size(), (*r)->spilled() ? " (in a temporary file)" : "", ms.count());
    }
    return r;
  }));
  v.png = std::move(png);
  v.size_bytes = v.png->size();
  return Status::OK();
}

}  // namespace slabfs::fusefs::views
