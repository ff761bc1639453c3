// The value types of include/slabfs/types.h: dtypes, shapes, scalars,
// selections, attributes and names.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "slabfs/types.h"

namespace slabfs {
namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  size_t size;
  bool is_float;
  bool is_signed;
  std::string_view aliases[3];
};

constexpr DTypeRow kDTypes[] = {
    {DType::kI1, "i1", 1, false, true, {"int8", "b", ""}},
    {DType::kI2, "i2", 2, false, true, {"int16", "h", ""}},
    {DType::kI4, "i4", 4, false, true, {"int32", "i", ""}},
    {DType::kI8, "i8", 8, false, true, {"int64", "q", ""}},
    {DType::kU1, "u1", 1, false, false, {"uint8", "B", ""}},
    {DType::kU2, "u2", 2, false, false, {"uint16", "H", ""}},
    {DType::kU4, "u4", 4, false, false, {"uint32", "I", ""}},
    {DType::kU8, "u8", 8, false, false, {"uint64", "Q", ""}},
    {DType::kF4, "f4", 4, true, true, {"float32", "f", ""}},
    {DType::kF8, "f8", 8, true, true, {"float64", "d", "double"}},
};

const DTypeRow& Row(DType t) {
  for (const auto& r : kDTypes)
    if (r.type == t) return r;
  return kDTypes[4];  // unreachable for valid codes
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

template <typename T>
Result<std::string> EncodeInteger(std::string_view text, DType t) {
  int base = 10;
  bool neg = false;
  std::string_view s = text;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  slabfs_u128 mag = 0;
  if (s.empty()) return Err(Status::InvalidArgument("'" + std::string(text) + "' is not a number"));
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return Err(Status::InvalidArgument("'" + std::string(text) + "' is not an integer"));
    mag = mag * base + d;
    if (mag > (static_cast<slabfs_u128>(1) << 64))
      return Err(
          Status::InvalidArgument("'" + std::string(text) + "' is out of range for " + std::string(DTypeName(t))));
  }
  slabfs_i128 v = neg ? -static_cast<slabfs_i128>(mag) : static_cast<slabfs_i128>(mag);
  if (v < static_cast<slabfs_i128>(std::numeric_limits<T>::min()) ||
      v > static_cast<slabfs_i128>(std::numeric_limits<T>::max()))
    return Err(Status::InvalidArgument("'" + std::string(text) + "' is out of range for " + std::string(DTypeName(t))));
  T x = static_cast<T>(v);
  return std::string(reinterpret_cast<const char*>(&x), sizeof x);
}

template <typename T>
Result<std::string> EncodeFloat(std::string_view text, DType t) {
  std::string s(text);
  double v;
  if (s == "nan" || s == "NaN")
    v = std::numeric_limits<double>::quiet_NaN();
  else if (s == "inf" || s == "+inf" || s == "infinity")
    v = std::numeric_limits<double>::infinity();
  else if (s == "-inf" || s == "-infinity")
    v = -std::numeric_limits<double>::infinity();
  else {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
      return Err(Status::InvalidArgument("'" + s + "' is not a number"));
  }
  if (std::isfinite(v) && std::fabs(v) > static_cast<double>(std::numeric_limits<T>::max()))
    return Err(Status::InvalidArgument("'" + s + "' is out of range for " + std::string(DTypeName(t))));
  T x = static_cast<T>(v);
  return std::string(reinterpret_cast<const char*>(&x), sizeof x);
}

template <typename T>
std::string FormatOne(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, end);
  } else {
    return std::to_string(v);
  }
}

}  // namespace

size_t ItemSize(DType t) { return Row(t).size; }
std::string_view DTypeName(DType t) { return Row(t).name; }
bool IsFloat(DType t) { return Row(t).is_float; }
bool IsSigned(DType t) { return Row(t).is_signed; }
bool IsValidDTypeCode(unsigned code) { return code >= 1 && code <= 10; }

Result<DType> ParseDType(std::string_view name) {
  std::string_view n = Trim(name);
  if (!n.empty() && (n.front() == '<' || n.front() == '|' || n.front() == '=')) n.remove_prefix(1);
  for (const auto& r : kDTypes) {
    if (n == r.name) return r.type;
    for (auto a : r.aliases)
      if (!a.empty() && n == a) return r.type;
  }
  return Err(
      Status::InvalidArgument("unknown dtype '" + std::string(name) + "' (use one of i1 i2 i4 i8 u1 u2 u4 u8 f4 f8)"));
}

Result<std::string> EncodeScalar(DType t, std::string_view text) {
  std::string_view s = Trim(text);
  switch (t) {
    case DType::kI1: return EncodeInteger<int8_t>(s, t);
    case DType::kI2: return EncodeInteger<int16_t>(s, t);
    case DType::kI4: return EncodeInteger<int32_t>(s, t);
    case DType::kI8: return EncodeInteger<int64_t>(s, t);
    case DType::kU1: return EncodeInteger<uint8_t>(s, t);
    case DType::kU2: return EncodeInteger<uint16_t>(s, t);
    case DType::kU4: return EncodeInteger<uint32_t>(s, t);
    case DType::kU8: return EncodeInteger<uint64_t>(s, t);
    case DType::kF4: return EncodeFloat<float>(s, t);
    case DType::kF8: return EncodeFloat<double>(s, t);
  }
  return Err(Status::InvalidArgument("bad dtype"));
}

std::string FormatScalar(DType t, const void* e) {
  switch (t) {
    case DType::kI1: return FormatOne<int8_t>(e);
    case DType::kI2: return FormatOne<int16_t>(e);
    case DType::kI4: return FormatOne<int32_t>(e);
    case DType::kI8: return FormatOne<int64_t>(e);
    case DType::kU1: return FormatOne<uint8_t>(e);
    case DType::kU2: return FormatOne<uint16_t>(e);
    case DType::kU4: return FormatOne<uint32_t>(e);
    case DType::kU8: return FormatOne<uint64_t>(e);
    case DType::kF4: return FormatOne<float>(e);
    case DType::kF8: return FormatOne<double>(e);
  }
  return "?";
}

Result<Dims> ParseDims(std::string_view text, bool allow_unlimited, bool allow_zero) {
  Dims out;
  std::string_view s = Trim(text);
  if (!s.empty() && (s.front() == '(' || s.front() == '[')) s.remove_prefix(1);
  if (!s.empty() && (s.back() == ')' || s.back() == ']')) s.remove_suffix(1);
  if (Trim(s).empty()) return Err(Status::InvalidArgument("empty shape"));
  size_t pos = 0;
  while (true) {
    size_t comma = s.find(',', pos);
    std::string_view part = Trim(s.substr(pos, comma == std::string_view::npos ? s.npos : comma - pos));
    if (part.empty()) {
      // A trailing comma as in the Python tuple "(5,)" is fine.
      if (comma == std::string_view::npos && !out.empty()) break;
      return Err(Status::InvalidArgument("empty dimension in '" + std::string(text) + "'"));
    }
    if (part == "unlimited" || part == "u" || part == "none" || part == "None" || part == "inf") {
      if (!allow_unlimited)
        return Err(Status::InvalidArgument("'unlimited' is not allowed in '" + std::string(text) + "'"));
      out.push_back(kUnlimited);
    } else {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
      if (part.front() == '-') return Err(Status::InvalidArgument("negative dimension in '" + std::string(text) + "'"));
      if (ec != std::errc() || p != part.data() + part.size())
        return Err(Status::InvalidArgument("bad dimension '" + std::string(part) + "' in '" + std::string(text) + "'"));
      if (v == kUnlimited)
        return Err(Status::InvalidArgument("dimension " + std::string(part) + " is too large (write 'unlimited')"));
      if (v == 0 && !allow_zero) return Err(Status::InvalidArgument("zero dimension in '" + std::string(text) + "'"));
      out.push_back(v);
    }
    if (out.size() > kMaxRank)
      return Err(Status::InvalidArgument("more than " + std::to_string(kMaxRank) + " dimensions"));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string FormatDims(const Dims& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += dims[i] == kUnlimited ? std::string("unlimited") : std::to_string(dims[i]);
  }
  return s;
}

Slab Slab::Box(const Dims& start, const Dims& count) {
  Slab s;
  s.dims.resize(start.size());
  for (size_t d = 0; d < start.size(); ++d) {
    s.dims[d].start = start[d];
    s.dims[d].stride = 1;
    s.dims[d].count = d < count.size() ? count[d] : 0;
    s.dims[d].block = 1;
  }
  return s;
}

Slab Slab::All(const Dims& shape) { return Box(Dims(shape.size(), 0), shape); }

uint64_t Slab::num_elements() const {
  uint64_t n = 1;
  for (const auto& d : dims) {
    uint64_t e = d.extent();
    if (e != 0 && n > std::numeric_limits<uint64_t>::max() / e) return std::numeric_limits<uint64_t>::max();
    n *= e;
  }
  return n;
}

Dims Slab::extents() const {
  Dims e;
  e.reserve(dims.size());
  for (const auto& d : dims) e.push_back(d.extent());
  return e;
}

DatasetOptions OptionsOf(const DatasetInfo& info) {
  DatasetOptions o;
  o.dtype = info.dtype;
  o.shape = info.shape;
  o.max_shape = info.max_shape;
  o.chunks = info.chunks;
  o.fill = info.fill;
  o.index = info.index;
  o.filters = info.filters;
  o.length_resizable = info.length_resizable;
  o.sparse = info.sparse;
  return o;
}

std::string_view IndexKindName(IndexKind k) {
  switch (k) {
    case IndexKind::kAuto: return "auto";
    case IndexKind::kSingle: return "single";
    case IndexKind::kCompact: return "compact";
    case IndexKind::kFixedArray: return "fixed";
    case IndexKind::kExtensibleArray: return "extensible";
    case IndexKind::kBTree: return "btree";
  }
  return "unknown";
}

Result<IndexKind> ParseIndexKind(std::string_view name) {
  for (auto k : {IndexKind::kAuto, IndexKind::kSingle, IndexKind::kCompact, IndexKind::kFixedArray,
                 IndexKind::kExtensibleArray, IndexKind::kBTree})
    if (name == IndexKindName(k)) return k;
  return Err(Status::InvalidArgument("unknown index kind '" + std::string(name) +
                                     "' (use single, compact, fixed, extensible or btree)"));
}

Attribute Attribute::String(std::string s) {
  Attribute a;
  a.kind = Kind::kString;
  a.data = std::move(s);
  return a;
}

Attribute Attribute::Integer(int64_t v) {
  return Numbers(DType::kI8, std::string(reinterpret_cast<const char*>(&v), sizeof v));
}

Attribute Attribute::Float(double v) {
  return Numbers(DType::kF8, std::string(reinterpret_cast<const char*>(&v), sizeof v));
}

Attribute Attribute::Numbers(DType t, std::string raw) {
  Attribute a;
  a.kind = Kind::kNumeric;
  a.dtype = t;
  a.data = std::move(raw);
  return a;
}

uint64_t Attribute::count() const { return kind == Kind::kString ? 1 : data.size() / ItemSize(dtype); }

std::string Attribute::ToText() const {
  if (kind == Kind::kString) return data;
  std::string s;
  size_t n = ItemSize(dtype);
  for (size_t i = 0; i + n <= data.size(); i += n) {
    if (i) s += ',';
    s += FormatScalar(dtype, data.data() + i);
  }
  return s;
}

Attribute Attribute::FromText(std::string_view text) {
  std::string_view s = Trim(text);
  if (s.empty()) return String(std::string(text));
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (true) {
    size_t c = s.find(',', pos);
    parts.push_back(Trim(s.substr(pos, c == s.npos ? s.npos : c - pos)));
    if (c == s.npos) break;
    pos = c + 1;
  }
  std::string ints, floats;
  bool all_int = true, all_num = true;
  for (auto p : parts) {
    if (p.empty()) return String(std::string(text));
    auto i = EncodeScalar(DType::kI8, p);
    if (i && p.find_first_of("xX") == std::string_view::npos)
      ints += *i;
    else
      all_int = false;
    // Only plain decimal forms count as numbers, so "nan" or "inf" stay text.
    bool plain = p.find_first_not_of("0123456789+-.eE") == std::string_view::npos;
    auto f = plain ? EncodeScalar(DType::kF8, p) : Result<std::string>(Err(Status::InvalidArgument("")));
    if (f)
      floats += *f;
    else
      all_num = false;
  }
  if (all_int) return Numbers(DType::kI8, std::move(ints));
  if (all_num) return Numbers(DType::kF8, std::move(floats));
  return String(std::string(text));
}

Status ValidateName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("empty name");
  if (name.size() > kMaxNameBytes)
    return Status::InvalidArgument("name longer than " + std::to_string(kMaxNameBytes) + " bytes");
  if (name == "." || name == "..") return Status::InvalidArgument("'" + std::string(name) + "' is not a valid name");
  if (name.find('/') != std::string_view::npos)
    return Status::InvalidArgument("name '" + std::string(name) + "' contains '/'");
  if (name.find('\0') != std::string_view::npos) return Status::InvalidArgument("name contains a NUL byte");
  return Status::OK();
}

}  // namespace slabfs
