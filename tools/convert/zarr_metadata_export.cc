// The metadata slab export writes: dtype names, fill values, the codecs a
// dataset's filters become, and the .zarray / zarr.json documents (see
// zarr_metadata.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "tools/convert/zarr_metadata.h"

namespace slabfs::tools::convert {

std::string V2DTypeName(DType t) { return fmt::format("{}{}", ItemSize(t) == 1 ? '|' : '<', DTypeName(t)); }

std::string V3DTypeName(DType t) {
  switch (t) {
    case DType::kI1: return "int8";
    case DType::kI2: return "int16";
    case DType::kI4: return "int32";
    case DType::kI8: return "int64";
    case DType::kU1: return "uint8";
    case DType::kU2: return "uint16";
    case DType::kU4: return "uint32";
    case DType::kU8: return "uint64";
    case DType::kF4: return "float32";
    case DType::kF8: return "float64";
  }
  return "?";
}

Json FillToJson(DType t, std::string_view bytes, int zarr_format) {
  char b[8] = {};
  std::memcpy(b, bytes.data(), std::min(bytes.size(), sizeof b));
  auto float_json = [&](double d, uint64_t bits, bool canonical_nan) -> Json {
    if (std::isnan(d)) {
      if (zarr_format == 3 && !canonical_nan) {
        return fmt::format("0x{:0{}x}", bits, ItemSize(t) * 2);
      }
      return "NaN";
    }
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return d;
  };
  switch (t) {
    case DType::kI1: {
      int8_t v;
      std::memcpy(&v, b, 1);
      return v;
    }
    case DType::kI2: {
      int16_t v;
      std::memcpy(&v, b, 2);
      return v;
    }
    case DType::kI4: {
      int32_t v;
      std::memcpy(&v, b, 4);
      return v;
    }
    case DType::kI8: {
      int64_t v;
      std::memcpy(&v, b, 8);
      return v;
    }
    case DType::kU1: {
      uint8_t v;
      std::memcpy(&v, b, 1);
      return v;
    }
    case DType::kU2: {
      uint16_t v;
      std::memcpy(&v, b, 2);
      return v;
    }
    case DType::kU4: {
      uint32_t v;
      std::memcpy(&v, b, 4);
      return v;
    }
    case DType::kU8: {
      uint64_t v;
      std::memcpy(&v, b, 8);
      return v;
    }
    case DType::kF4: {
      float v;
      uint32_t bits;
      std::memcpy(&v, b, 4);
      std::memcpy(&bits, b, 4);
      return float_json(static_cast<double>(v), bits, bits == 0x7fc00000u);
    }
    case DType::kF8: {
      double v;
      uint64_t bits;
      std::memcpy(&v, b, 8);
      std::memcpy(&bits, b, 8);
      return float_json(v, bits, bits == 0x7ff8000000000000ull);
    }
  }
  return 0;
}

ExportEncoding EncodingFor(const DatasetInfo& info, int zarr_format) {
  bool shuffle = false, checksum = false;
  int deflate = 0;
  std::string_view rest = info.filters;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view f = rest.substr(0, comma);
    if (f == "shuffle")
      shuffle = true;
    else if (f == "checksum")
      checksum = true;
    else if (f.starts_with("deflate="))
      deflate = std::atoi(std::string(f.substr(8)).c_str());
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  const size_t item = ItemSize(info.dtype);
  ExportEncoding e;
  if (deflate > 0 && shuffle && item > 1) {
    ZarrCodec z;
    z.kind = ZarrCodec::Kind::kBlosc;
    z.cname = "zlib";
    z.level = deflate;
    z.shuffle = 1;
    z.typesize = item;
    e.codecs.push_back(z);
  } else if (deflate > 0) {
    ZarrCodec z;
    z.kind = zarr_format == 2 ? ZarrCodec::Kind::kZlib : ZarrCodec::Kind::kGzip;
    z.level = deflate;
    e.codecs.push_back(z);
  }
  if (checksum && zarr_format == 3) {
    ZarrCodec z;
    z.kind = ZarrCodec::Kind::kCrc32c;
    e.codecs.push_back(z);
  } else if (checksum) {
    e.note = "its CRC-32C checksum is not written (Zarr v2 has no such codec)";
  }
  if (zarr_format == 2) {
    e.metadata = nullptr;
    for (const ZarrCodec& z : e.codecs) {
      if (z.kind == ZarrCodec::Kind::kBlosc) {
        e.metadata = {
            {"id", "blosc"}, {"cname", z.cname}, {"clevel", z.level}, {"shuffle", z.shuffle}, {"blocksize", 0}};
      } else if (z.kind == ZarrCodec::Kind::kZlib) {
        e.metadata = {{"id", "zlib"}, {"level", z.level}};
      }
    }
    return e;
  }
  e.metadata = Json::array();
  e.metadata.push_back({{"name", "bytes"}, {"configuration", {{"endian", "little"}}}});
  for (const ZarrCodec& z : e.codecs) {
    switch (z.kind) {
      case ZarrCodec::Kind::kBlosc:
        e.metadata.push_back({{"name", "blosc"},
                              {"configuration",
                               {{"cname", z.cname},
                                {"clevel", z.level},
                                {"shuffle", "shuffle"},
                                {"typesize", z.typesize},
                                {"blocksize", 0}}}});
        break;
      case ZarrCodec::Kind::kGzip:
      case ZarrCodec::Kind::kZlib:
        e.metadata.push_back({{"name", "gzip"}, {"configuration", {{"level", z.level}}}});
        break;
      case ZarrCodec::Kind::kCrc32c: e.metadata.push_back({{"name", "crc32c"}}); break;
      case ZarrCodec::Kind::kShuffle: break;  // never chosen for an export (shuffle goes inside blosc)
    }
  }
  return e;
}

std::optional<std::string> ElementAs(DType to, const Attribute& a) {
  if (a.kind != Attribute::Kind::kNumeric || a.count() != 1 || a.data.size() != ItemSize(a.dtype)) {
    return std::nullopt;
  }
  char raw[8] = {};
  std::memcpy(raw, a.data.data(), a.data.size());
  // The value: a double for float sources, else a 128-bit integer.
  double d = 0;
  slabfs_i128 i = 0;
  const bool from_float = IsFloat(a.dtype);
  switch (a.dtype) {
    case DType::kF4: {
      float v;
      std::memcpy(&v, raw, 4);
      d = v;
      break;
    }
    case DType::kF8: std::memcpy(&d, raw, 8); break;
    case DType::kI1: {
      int8_t v;
      std::memcpy(&v, raw, 1);
      i = v;
      break;
    }
    case DType::kI2: {
      int16_t v;
      std::memcpy(&v, raw, 2);
      i = v;
      break;
    }
    case DType::kI4: {
      int32_t v;
      std::memcpy(&v, raw, 4);
      i = v;
      break;
    }
    case DType::kI8: {
      int64_t v;
      std::memcpy(&v, raw, 8);
      i = v;
      break;
    }
    case DType::kU1: {
      uint8_t v;
      std::memcpy(&v, raw, 1);
      i = v;
      break;
    }
    case DType::kU2: {
      uint16_t v;
      std::memcpy(&v, raw, 2);
      i = v;
      break;
    }
    case DType::kU4: {
      uint32_t v;
      std::memcpy(&v, raw, 4);
      i = v;
      break;
    }
    case DType::kU8: {
      uint64_t v;
      std::memcpy(&v, raw, 8);
      i = v;
      break;
    }
  }
  std::string out(ItemSize(to), '\0');
  auto put = [&](auto v) { std::memcpy(out.data(), &v, sizeof v); };
  if (to == DType::kF4 || to == DType::kF8) {
    const double v = from_float ? d : static_cast<double>(i);
    if (to == DType::kF4)
      put(static_cast<float>(v));
    else
      put(v);
    return out;
  }
  if (from_float) {
    if (!std::isfinite(d) || d != std::trunc(d) || std::fabs(d) > 1.8e19) return std::nullopt;
    i = static_cast<slabfs_i128>(d);
  }
  auto fits = [&](slabfs_i128 lo, slabfs_i128 hi) { return i >= lo && i <= hi; };
  switch (to) {
    case DType::kI1:
      if (!fits(INT8_MIN, INT8_MAX)) return std::nullopt;
      put(static_cast<int8_t>(i));
      break;
    case DType::kI2:
      if (!fits(INT16_MIN, INT16_MAX)) return std::nullopt;
      put(static_cast<int16_t>(i));
      break;
    case DType::kI4:
      if (!fits(INT32_MIN, INT32_MAX)) return std::nullopt;
      put(static_cast<int32_t>(i));
      break;
    case DType::kI8:
      if (!fits(INT64_MIN, INT64_MAX)) return std::nullopt;
      put(static_cast<int64_t>(i));
      break;
    case DType::kU1:
      if (!fits(0, UINT8_MAX)) return std::nullopt;
      put(static_cast<uint8_t>(i));
      break;
    case DType::kU2:
      if (!fits(0, UINT16_MAX)) return std::nullopt;
      put(static_cast<uint16_t>(i));
      break;
    case DType::kU4:
      if (!fits(0, UINT32_MAX)) return std::nullopt;
      put(static_cast<uint32_t>(i));
      break;
    case DType::kU8:
      if (!fits(0, UINT64_MAX)) return std::nullopt;
      put(static_cast<uint64_t>(i));
      break;
    default: return std::nullopt;
  }
  return out;
}

std::optional<Json> DimensionNamesList(const Attribute& a, int zarr_format) {
  if (a.kind != Attribute::Kind::kString) return std::nullopt;
  auto list = ParseJson(a.data, kDimensionsAttribute);
  if (!list || !list->is_array()) return std::nullopt;
  for (const Json& n : *list) {
    if (!n.is_string() && !(zarr_format == 3 && n.is_null())) return std::nullopt;
  }
  return std::move(*list);
}

ExportFill FillForExport(const DatasetInfo& info, const Attribute* marker, int zarr_format) {
  ExportFill f;
  if (zarr_format != 2) {
    f.value = FillToJson(info.dtype, info.fill, zarr_format);
    return f;
  }
  std::optional<std::string> bytes;
  if (marker != nullptr) bytes = ElementAs(info.dtype, *marker);
  if (!bytes) {
    f.value = nullptr;
    f.every_chunk = true;
    return f;
  }
  f.value = FillToJson(info.dtype, *bytes, 2);
  f.marker_used = true;
  f.every_chunk = *bytes != info.fill;
  return f;
}

Json ArrayMetadata(const DatasetInfo& info, const ExportEncoding& e, int zarr_format, const Json& attributes,
                   const std::optional<Json>& dimension_names, const Json& fill_value) {
  const Json& fill = fill_value;
  if (zarr_format == 2) {
    return {{"zarr_format", 2},          {"shape", info.shape},
            {"chunks", info.chunks},     {"dtype", V2DTypeName(info.dtype)},
            {"fill_value", fill},        {"order", "C"},
            {"compressor", e.metadata},  {"filters", nullptr},
            {"dimension_separator", "."}};
  }
  Json j = {{"zarr_format", 3},
            {"node_type", "array"},
            {"shape", info.shape},
            {"data_type", V3DTypeName(info.dtype)},
            {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", info.chunks}}}}},
            {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
            {"fill_value", fill},
            {"codecs", e.metadata},
            {"attributes", attributes}};
  if (dimension_names) j["dimension_names"] = *dimension_names;
  return j;
}

Json GroupMetadata(int zarr_format, const Json& attributes) {
  if (zarr_format == 2) return {{"zarr_format", 2}};
  return {{"zarr_format", 3}, {"node_type", "group"}, {"attributes", attributes}};
}

}  // namespace slabfs::tools::convert
