#include "tools/convert/zarr_metadata.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace slabfs::tools::convert {
namespace {

// slabfs's limit on the bytes of one chunk (engine/format/layout.h).
constexpr uint64_t kMaxChunkBytes = 1ull << 30;

const Json* Member(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Status Bad(std::string_view what, std::string_view why) { return Status::Corruption(fmt::format("{}: {}", what, why)); }

// A non-negative JSON integer.
std::optional<uint64_t> AsCount(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

std::optional<int64_t> AsInt(const Json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()})
    return static_cast<int64_t>(v.get<uint64_t>());
  return std::nullopt;
}

Result<Dims> ParseDimsList(const Json* v, std::string_view field, std::string_view what, bool allow_zero) {
  if (!v || !v->is_array()) {
    return Err(Bad(what, fmt::format("\"{}\" is missing or not a list", field)));
  }
  if (v->size() > 1024) return Err(Bad(what, fmt::format("\"{}\" has {} dimensions", field, v->size())));
  Dims out;
  for (const Json& e : *v) {
    auto n = AsCount(e);
    if (!n || (*n == 0 && !allow_zero)) {
      return Err(Bad(what, fmt::format("\"{}\" holds {}, not a {} integer", field, e.dump(),
                                       allow_zero ? "non-negative" : "positive")));
    }
    out.push_back(*n);
  }
  return out;
}

// Checks shape against chunks and sizes; fills `unsupported` for what
// slabfs cannot hold.
Status CheckGeometry(ParsedArray& p, std::string_view what) {
  ZarrArray& a = p.array;
  if (a.chunks.size() != a.shape.size()) {
    return Bad(what, fmt::format("the chunk shape ({}) has rank {} but the shape ({}) has rank {}",
                                 FormatDims(a.chunks), a.chunks.size(), FormatDims(a.shape), a.shape.size()));
  }
  uint64_t elements = 1, chunk = 1;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (__builtin_mul_overflow(elements, a.shape[d], &elements) || __builtin_mul_overflow(chunk, a.chunks[d], &chunk)) {
      return Bad(what, fmt::format("the shape ({}) or chunk shape ({}) holds more than 2^64 elements",
                                   FormatDims(a.shape), FormatDims(a.chunks)));
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, uint64_t{8}, &bytes) || __builtin_mul_overflow(chunk, uint64_t{8}, &bytes)) {
    return Bad(what, fmt::format("the shape ({}) or chunk shape ({}) is too large to address", FormatDims(a.shape),
                                 FormatDims(a.chunks)));
  }
  if (!p.unsupported.empty()) return Status::OK();
  if (a.shape.size() > static_cast<size_t>(kMaxRank)) {
    p.unsupported = fmt::format("rank {} (slabfs datasets have rank 1 to 32)", a.shape.size());
  } else if (chunk * ItemSize(a.dtype) > kMaxChunkBytes) {
    p.unsupported = fmt::format("chunks of {} bytes (slabfs chunks hold at most 1 GiB)", chunk * ItemSize(a.dtype));
  }
  return Status::OK();
}

// --------------------------------------------------------------- dtypes

// A v2 typestr ("<f4", "|u1", ">i2"): sets dtype and byte order, or says
// why slabfs cannot hold it.
void ParseV2DType(const Json& v, ParsedArray& p) {
  if (!v.is_string()) {
    p.unsupported = v.is_array() ? "a structured dtype" : "a dtype that is not a type string";
    return;
  }
  const std::string s = v.get<std::string>();
  if (s.size() < 3 || (s[0] != '<' && s[0] != '>' && s[0] != '|')) {
    p.unsupported = fmt::format("dtype '{}'", s);
    return;
  }
  const std::string body = s.substr(1);
  static const struct {
    const char* name;
    DType t;
  } kTypes[] = {{"i1", DType::kI1}, {"i2", DType::kI2}, {"i4", DType::kI4}, {"i8", DType::kI8}, {"u1", DType::kU1},
                {"u2", DType::kU2}, {"u4", DType::kU4}, {"u8", DType::kU8}, {"f4", DType::kF4}, {"f8", DType::kF8}};
  for (const auto& k : kTypes) {
    if (body == k.name) {
      p.array.dtype = k.t;
      p.array.big_endian = s[0] == '>' && ItemSize(k.t) > 1;
      return;
    }
  }
  const char kind = body[0];
  const char* what = kind == 'b'                  ? "bool"
                     : kind == 'c'                ? "complex"
                     : kind == 'f'                ? "float of this size"
                     : kind == 'M' || kind == 'm' ? "datetime"
                     : kind == 'S' || kind == 'U' ? "string"
                     : kind == 'O'                ? "object"
                     : kind == 'V'                ? "void/structured"
                                                  : "unknown";
  p.unsupported = fmt::format("dtype '{}' ({}; slabfs holds i1-i8, u1-u8, f4, f8)", s, what);
}

void ParseV3DType(const Json& v, ParsedArray& p) {
  static const struct {
    const char* name;
    DType t;
  } kTypes[] = {{"int8", DType::kI1},    {"int16", DType::kI2},  {"int32", DType::kI4},  {"int64", DType::kI8},
                {"uint8", DType::kU1},   {"uint16", DType::kU2}, {"uint32", DType::kU4}, {"uint64", DType::kU8},
                {"float32", DType::kF4}, {"float64", DType::kF8}};
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    for (const auto& k : kTypes) {
      if (s == k.name) {
        p.array.dtype = k.t;
        return;
      }
    }
    p.unsupported = fmt::format("data type '{}' (slabfs holds int8-64, uint8-64, float32, float64)", s);
    return;
  }
  const Json* name = Member(v, "name");
  p.unsupported = fmt::format("data type '{}'", name && name->is_string() ? name->get<std::string>() : v.dump());
}

// --------------------------------------------------------------- fill values

template <typename T>
std::string Bytes(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

// The fill value's bytes; v2's null (no fill value) reads as zero.
Result<std::string> ParseFill(const Json* v, const ZarrArray& a, std::string_view what) {
  const DType t = a.dtype;
  const size_t item = ItemSize(t);
  if (!v) {
    if (a.zarr_format == 2) return std::string(item, '\0');
    return Err(Bad(what, "\"fill_value\" is missing (Zarr v3 requires one)"));
  }
  if (v->is_null()) {
    if (a.zarr_format == 2) return std::string(item, '\0');
    return Err(Bad(what, "\"fill_value\" is null, which Zarr v3 does not permit"));
  }
  auto bad = [&] { return Err(Bad(what, fmt::format("fill_value {} does not fit {}", v->dump(), DTypeName(t)))); };
  if (IsFloat(t)) {
    double d = 0;
    if (v->is_number()) {
      d = v->get<double>();
    } else if (v->is_string()) {
      const std::string s = v->get<std::string>();
      if (s == "NaN")
        d = std::numeric_limits<double>::quiet_NaN();
      else if (s == "Infinity" || s == "+Infinity")
        d = std::numeric_limits<double>::infinity();
      else if (s == "-Infinity")
        d = -std::numeric_limits<double>::infinity();
      else if (s.size() == 2 + 2 * item && (s.starts_with("0x") || s.starts_with("0X"))) {
        uint64_t bits = 0;
        for (size_t i = 2; i < s.size(); ++i) {
          const char c = s[i];
          int h = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
          if (h < 0) return bad();
          bits = bits << 4 | static_cast<uint64_t>(h);
        }
        return item == 4 ? Bytes(static_cast<uint32_t>(bits)) : Bytes(bits);
      } else {
        return bad();
      }
    } else {
      return bad();
    }
    return t == DType::kF4 ? Bytes(static_cast<float>(d)) : Bytes(d);
  }
  // Integers: exact, in range (an integral float such as 0.0 is accepted).
  int64_t si = 0;
  uint64_t ui = 0;
  bool negative = false;
  if (v->is_number_unsigned()) {
    ui = v->get<uint64_t>();
  } else if (v->is_number_integer()) {
    si = v->get<int64_t>();
    negative = si < 0;
    ui = static_cast<uint64_t>(si);
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    // [-2^63, 2^64): the casts below are defined; the range checks follow.
    if (!(d == std::floor(d)) || d < -9223372036854775808.0 || d >= 18446744073709551616.0) {
      return bad();
    }
    negative = d < 0;
    if (negative) {
      si = static_cast<int64_t>(d);
      ui = static_cast<uint64_t>(si);
    } else {
      ui = static_cast<uint64_t>(d);
    }
  } else if (v->is_boolean()) {
    ui = v->get<bool>() ? 1 : 0;
  } else {
    return bad();
  }
  const unsigned bits = static_cast<unsigned>(item * 8);
  if (IsSigned(t)) {
    const int64_t value = negative ? si : static_cast<int64_t>(ui);
    if (!negative && ui > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return bad();
    if (bits < 64) {
      const int64_t lo = -(int64_t{1} << (bits - 1)), hi = (int64_t{1} << (bits - 1)) - 1;
      if (value < lo || value > hi) return bad();
    }
    return Bytes(value).substr(0, item);
  }
  if (negative || (bits < 64 && ui >= (uint64_t{1} << bits))) return bad();
  return Bytes(ui).substr(0, item);
}

// --------------------------------------------------------------- codecs

Status ParseBloscV2(const Json& c, ZarrArray& a, ParsedArray& p, std::string_view what) {
  ZarrCodec z;
  z.kind = ZarrCodec::Kind::kBlosc;
  const Json* cname = Member(c, "cname");
  const Json* clevel = Member(c, "clevel");
  const Json* shuffle = Member(c, "shuffle");
  if (!cname || !cname->is_string()) return Bad(what, "blosc without a \"cname\" string");
  z.cname = cname->get<std::string>();
  auto level = clevel ? AsInt(*clevel) : std::optional<int64_t>(5);
  if (!level || *level < 0 || *level > 9) return Bad(what, "blosc \"clevel\" is not 0 to 9");
  z.level = static_cast<int>(*level);
  auto sh = shuffle ? AsInt(*shuffle) : std::optional<int64_t>(1);
  if (!sh || *sh < -1 || *sh > 2) return Bad(what, "blosc \"shuffle\" is not -1, 0, 1 or 2");
  // -1: numcodecs' automatic choice, bit shuffle for 1-byte elements.
  z.shuffle = *sh == -1 ? (ItemSize(a.dtype) == 1 ? 2 : 1) : static_cast<int>(*sh);
  z.typesize = ItemSize(a.dtype);
  if (!BloscHasCompressor(z.cname) && p.unsupported.empty()) {
    p.unsupported = fmt::format("blosc compressor '{}' (not in this c-blosc)", z.cname);
  }
  a.codecs.push_back(z);
  return Status::OK();
}

Status ParseDeflateLevel(const Json& cfg, ZarrCodec::Kind kind, int default_level, ZarrArray& a,
                         std::string_view what) {
  ZarrCodec z;
  z.kind = kind;
  const Json* level = Member(cfg, "level");
  auto l = level ? AsInt(*level) : std::optional<int64_t>(default_level);
  if (!l || *l < 0 || *l > 9) return Bad(what, "zlib/gzip \"level\" is not 0 to 9");
  z.level = static_cast<int>(*l);
  a.codecs.push_back(z);
  return Status::OK();
}

// One v3 codec: {"name": ..., "configuration": {...}} or a bare name.
struct V3Codec {
  std::string name;
  Json config = Json::object();
};

Result<V3Codec> V3CodecOf(const Json& c, std::string_view what) {
  V3Codec out;
  if (c.is_string()) {
    out.name = c.get<std::string>();
    return out;
  }
  const Json* name = Member(c, "name");
  if (!name || !name->is_string()) return Err(Bad(what, "a codec without a \"name\""));
  out.name = name->get<std::string>();
  if (const Json* cfg = Member(c, "configuration")) {
    if (!cfg->is_object()) return Err(Bad(what, fmt::format("codec {}: \"configuration\" is not an object", out.name)));
    out.config = *cfg;
  }
  return out;
}

Status ParseV3Codecs(const Json* codecs, ParsedArray& p, std::string_view what) {
  ZarrArray& a = p.array;
  if (!codecs || !codecs->is_array() || codecs->empty()) {
    return Bad(what, "\"codecs\" is missing or not a non-empty list");
  }
  bool have_bytes = false;
  auto unsupported = [&](std::string why) {
    if (p.unsupported.empty()) p.unsupported = std::move(why);
  };
  for (const Json& c : *codecs) {
    // Once the array is known to be one slabfs cannot hold, the rest of the
    // chain is not checked: an unknown codec may be the array-to-bytes one
    // (vlen-utf8 for every string array zarr-python 3 writes, zfpy,
    // pcodec), and the import skips the array with a note either way.
    if (!p.unsupported.empty()) break;
    SLABFS_ASSIGN_OR_RETURN(V3Codec codec, V3CodecOf(c, what));
    const std::string& n = codec.name;
    if (n == "transpose") {
      if (have_bytes) return Bad(what, "codec transpose comes after the bytes codec");
      const Json* order = Member(codec.config, "order");
      if (!order || !order->is_array() || order->size() != a.shape.size()) {
        return Bad(what, "transpose \"order\" is not a list of one index per dimension");
      }
      if (!a.transpose.empty()) {
        unsupported("more than one transpose codec");
        continue;
      }
      std::vector<size_t> perm;
      std::vector<bool> seen(a.shape.size(), false);
      for (const Json& e : *order) {
        auto i = AsCount(e);
        if (!i || *i >= a.shape.size() || seen[*i]) {
          return Bad(what, fmt::format("transpose \"order\" {} is not a permutation", order->dump()));
        }
        seen[*i] = true;
        perm.push_back(static_cast<size_t>(*i));
      }
      bool identity = true;
      for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == i;
      if (!identity) a.transpose = std::move(perm);
    } else if (n == "bytes" || n == "endian") {
      if (have_bytes) return Bad(what, "more than one array-to-bytes codec");
      have_bytes = true;
      const Json* endian = Member(codec.config, "endian");
      if (endian && endian->is_string() && endian->get<std::string>() == "big") {
        a.big_endian = ItemSize(a.dtype) > 1;
      } else if (endian && !(endian->is_string() && endian->get<std::string>() == "little")) {
        return Bad(what, fmt::format("bytes \"endian\" {} is not \"little\" or \"big\"", endian->dump()));
      } else if (!endian && p.unsupported.empty() && ItemSize(a.dtype) > 1) {
        return Bad(what, "the bytes codec gives no \"endian\" for a multi-byte data type");
      }
    } else if (n == "sharding_indexed") {
      unsupported("sharding (codec sharding_indexed)");
      have_bytes = true;
    } else if (n == "gzip" || n == "zlib") {
      if (!have_bytes) return Bad(what, fmt::format("codec {} comes before the bytes codec", n));
      SLABFS_RETURN_IF_ERROR(
          ParseDeflateLevel(codec.config, n == "gzip" ? ZarrCodec::Kind::kGzip : ZarrCodec::Kind::kZlib, 1, a, what));
    } else if (n == "blosc") {
      if (!have_bytes) return Bad(what, "codec blosc comes before the bytes codec");
      ZarrCodec z;
      z.kind = ZarrCodec::Kind::kBlosc;
      const Json* cname = Member(codec.config, "cname");
      const Json* clevel = Member(codec.config, "clevel");
      const Json* shuffle = Member(codec.config, "shuffle");
      const Json* typesize = Member(codec.config, "typesize");
      if (!cname || !cname->is_string()) return Bad(what, "blosc without a \"cname\" string");
      z.cname = cname->get<std::string>();
      auto level = clevel ? AsInt(*clevel) : std::nullopt;
      if (!level || *level < 0 || *level > 9) return Bad(what, "blosc \"clevel\" is not 0 to 9");
      z.level = static_cast<int>(*level);
      const std::string mode = shuffle && shuffle->is_string() ? shuffle->get<std::string>() : "";
      if (mode == "noshuffle")
        z.shuffle = 0;
      else if (mode == "shuffle")
        z.shuffle = 1;
      else if (mode == "bitshuffle")
        z.shuffle = 2;
      else
        return Bad(what, "blosc \"shuffle\" is not noshuffle, shuffle or bitshuffle");
      auto ts = typesize ? AsCount(*typesize) : std::optional<uint64_t>(ItemSize(a.dtype));
      if (!ts || *ts == 0 || *ts > 255) return Bad(what, "blosc \"typesize\" is not 1 to 255");
      z.typesize = static_cast<size_t>(*ts);
      if (!BloscHasCompressor(z.cname)) {
        unsupported(fmt::format("blosc compressor '{}' (not in this c-blosc)", z.cname));
      }
      a.codecs.push_back(z);
    } else if (n == "crc32c") {
      if (!have_bytes) return Bad(what, "codec crc32c comes before the bytes codec");
      ZarrCodec z;
      z.kind = ZarrCodec::Kind::kCrc32c;
      a.codecs.push_back(z);
    } else {
      unsupported(fmt::format("codec '{}'", n));
    }
  }
  if (!have_bytes && p.unsupported.empty()) return Bad(what, "\"codecs\" has no array-to-bytes codec (bytes)");
  return Status::OK();
}

// Unknown members of a v3 document: an extension marked
// "must_understand": false may be ignored; any other is refused.
void CheckV3Extensions(const Json& j, std::initializer_list<std::string_view> known, ParsedArray* p,
                       std::string* unsupported) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    const Json* mu = Member(it.value(), "must_understand");
    if (mu && mu->is_boolean() && !mu->get<bool>()) continue;
    std::string why = fmt::format("metadata field '{}' that must be understood", it.key());
    if (p && p->unsupported.empty()) p->unsupported = why;
    if (unsupported && unsupported->empty()) *unsupported = why;
  }
}

// A 0-d array becomes shape (1), chunks (1), once every check that needs
// its true rank (chunks, transpose order, dimension names) has run.
void HoldScalar(ZarrArray& a) {
  if (!a.shape.empty()) return;
  a.scalar = true;
  a.shape = a.chunks = {1};
  a.transpose.clear();
}

std::optional<Json> AttributesOf(const Json& j) {
  const Json* attrs = Member(j, "attributes");
  if (!attrs) return Json::object();
  if (!attrs->is_object()) return std::nullopt;
  return *attrs;
}

}  // namespace

uint64_t ZarrArray::chunk_elements() const {
  uint64_t n = 1;
  for (uint64_t c : chunks) n *= c;
  return n;
}

Result<ParsedArray> ParseZarray(const Json& j, std::string_view what) {
  if (!j.is_object()) return Err(Bad(what, "not a JSON object"));
  const Json* format = Member(j, "zarr_format");
  if (!format || AsInt(*format) != 2) return Err(Bad(what, "\"zarr_format\" is not 2"));
  ParsedArray p;
  ZarrArray& a = p.array;
  a.zarr_format = 2;
  const Json* dtype = Member(j, "dtype");
  if (!dtype) return Err(Bad(what, "\"dtype\" is missing"));
  ParseV2DType(*dtype, p);
  SLABFS_ASSIGN_OR_RETURN(a.shape, ParseDimsList(Member(j, "shape"), "shape", what, true));
  SLABFS_ASSIGN_OR_RETURN(a.chunks, ParseDimsList(Member(j, "chunks"), "chunks", what, false));
  SLABFS_RETURN_IF_ERROR_R(CheckGeometry(p, what));

  const Json* order = Member(j, "order");
  const std::string o = order && order->is_string() ? order->get<std::string>() : "";
  if (o == "F") {
    for (size_t d = a.shape.size(); d-- > 0;) a.transpose.push_back(d);
    if (a.transpose.size() < 2) a.transpose.clear();
  } else if (o != "C") {
    return Err(Bad(what, "\"order\" is not \"C\" or \"F\""));
  }
  if (const Json* max = Member(j, kMaxShapeAttribute)) a.max_shape = *max;
  const Json* sep = Member(j, "dimension_separator");
  if (sep && !sep->is_null()) {
    const std::string s = sep->is_string() ? sep->get<std::string>() : "";
    if (s != "." && s != "/") return Err(Bad(what, "\"dimension_separator\" is not \".\" or \"/\""));
    a.separator = s[0];
  }
  if (const Json* filters = Member(j, "filters"); filters && !filters->is_null()) {
    if (!filters->is_array()) return Err(Bad(what, "\"filters\" is not a list or null"));
    // Filters run before the compressor. numcodecs' byte shuffle is ours;
    // any other filter (delta, scale-offset, ...) is named and refused.
    std::string names;
    for (const Json& f : *filters) {
      const Json* id = Member(f, "id");
      const std::string name = id && id->is_string() ? id->get<std::string>() : std::string("?");
      if (name == "shuffle") {
        const Json* es = Member(f, "elementsize");
        const std::optional<int64_t> stride = es ? AsInt(*es) : std::optional<int64_t>(4);
        if (!stride || *stride < 1 || *stride > 1 << 20) {
          return Err(Bad(what, "the shuffle filter's \"elementsize\" is not a positive integer"));
        }
        ZarrCodec z;
        z.kind = ZarrCodec::Kind::kShuffle;
        z.typesize = static_cast<size_t>(*stride);
        a.codecs.push_back(z);
        continue;
      }
      names += (names.empty() ? "" : ", ") + name;
    }
    if (!names.empty() && p.unsupported.empty()) p.unsupported = fmt::format("filters {}", names);
  }
  if (const Json* c = Member(j, "compressor"); c && !c->is_null()) {
    const Json* id = Member(*c, "id");
    if (!id || !id->is_string()) return Err(Bad(what, "the compressor has no \"id\""));
    const std::string name = id->get<std::string>();
    if (name == "zlib" || name == "gzip") {
      SLABFS_RETURN_IF_ERROR_R(
          ParseDeflateLevel(*c, name == "zlib" ? ZarrCodec::Kind::kZlib : ZarrCodec::Kind::kGzip, 1, a, what));
    } else if (name == "blosc") {
      SLABFS_RETURN_IF_ERROR_R(ParseBloscV2(*c, a, p, what));
    } else if (p.unsupported.empty()) {
      p.unsupported = fmt::format("compressor '{}'", name);
    }
  }
  if (p.unsupported.empty()) {
    SLABFS_ASSIGN_OR_RETURN(a.fill, ParseFill(Member(j, "fill_value"), a, what));
    const Json* fv = Member(j, "fill_value");
    a.fill_is_marker = fv != nullptr && !fv->is_null();
  }
  HoldScalar(a);
  return p;
}

Result<ParsedArray> ParseV3Array(const Json& j, std::string_view what) {
  if (!j.is_object()) return Err(Bad(what, "not a JSON object"));
  const Json* format = Member(j, "zarr_format");
  if (!format || AsInt(*format) != 3) return Err(Bad(what, "\"zarr_format\" is not 3"));
  const Json* node = Member(j, "node_type");
  if (!node || !node->is_string() || node->get<std::string>() != "array") {
    return Err(Bad(what, "\"node_type\" is not \"array\""));
  }
  ParsedArray p;
  ZarrArray& a = p.array;
  a.zarr_format = 3;
  a.separator = '/';
  a.key_prefix_c = true;
  const Json* dtype = Member(j, "data_type");
  if (!dtype) return Err(Bad(what, "\"data_type\" is missing"));
  ParseV3DType(*dtype, p);
  SLABFS_ASSIGN_OR_RETURN(a.shape, ParseDimsList(Member(j, "shape"), "shape", what, true));

  const Json* grid = Member(j, "chunk_grid");
  const Json* grid_name = grid ? Member(*grid, "name") : nullptr;
  if (!grid_name || !grid_name->is_string()) return Err(Bad(what, "\"chunk_grid\" has no name"));
  if (grid_name->get<std::string>() != "regular") {
    if (p.unsupported.empty()) {
      p.unsupported = fmt::format("chunk grid '{}'", grid_name->get<std::string>());
    }
    a.chunks = Dims(a.shape.size(), 1);
  } else {
    const Json* cfg = Member(*grid, "configuration");
    SLABFS_ASSIGN_OR_RETURN(a.chunks,
                            ParseDimsList(cfg ? Member(*cfg, "chunk_shape") : nullptr, "chunk_shape", what, false));
  }
  SLABFS_RETURN_IF_ERROR_R(CheckGeometry(p, what));

  if (const Json* enc = Member(j, "chunk_key_encoding")) {
    V3Codec e;
    SLABFS_ASSIGN_OR_RETURN(e, V3CodecOf(*enc, what));
    if (e.name == "v2") {
      a.key_prefix_c = false;
      a.separator = '.';
    } else if (e.name != "default") {
      return Err(Bad(what, fmt::format("chunk key encoding '{}' is not default or v2", e.name)));
    }
    if (const Json* sep = Member(e.config, "separator")) {
      const std::string s = sep->is_string() ? sep->get<std::string>() : "";
      if (s != "." && s != "/") return Err(Bad(what, "the chunk key separator is not \".\" or \"/\""));
      a.separator = s[0];
    }
  } else {
    return Err(Bad(what, "\"chunk_key_encoding\" is missing"));
  }
  SLABFS_RETURN_IF_ERROR_R(ParseV3Codecs(Member(j, "codecs"), p, what));
  if (const Json* st = Member(j, "storage_transformers"); st && !(st->is_array() && st->empty())) {
    if (p.unsupported.empty()) p.unsupported = "storage transformers";
  }
  if (const Json* names = Member(j, "dimension_names"); names && !names->is_null()) {
    bool ok = names->is_array() && names->size() == a.shape.size();
    for (const Json& n : ok ? *names : Json::array()) ok &= n.is_string() || n.is_null();
    if (!ok) return Err(Bad(what, "\"dimension_names\" is not one name or null per dimension"));
    a.dimension_names = *names;
  }
  auto attrs = AttributesOf(j);
  if (!attrs) return Err(Bad(what, "\"attributes\" is not an object"));
  a.attributes = std::move(*attrs);
  CheckV3Extensions(j,
                    {"zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value",
                     "codecs", "attributes", "dimension_names", "storage_transformers"},
                    &p, nullptr);
  if (p.unsupported.empty()) {
    SLABFS_ASSIGN_OR_RETURN(a.fill, ParseFill(Member(j, "fill_value"), a, what));
  }
  HoldScalar(a);
  return p;
}

Result<Json> ParseV3Group(const Json& j, std::string_view what) {
  if (!j.is_object()) return Err(Bad(what, "not a JSON object"));
  const Json* format = Member(j, "zarr_format");
  if (!format || AsInt(*format) != 3) return Err(Bad(what, "\"zarr_format\" is not 3"));
  const Json* node = Member(j, "node_type");
  if (!node || !node->is_string() || node->get<std::string>() != "group") {
    return Err(Bad(what, "\"node_type\" is not \"group\""));
  }
  auto attrs = AttributesOf(j);
  if (!attrs) return Err(Bad(what, "\"attributes\" is not an object"));
  // zarr-python's consolidated metadata is a cache of the children's
  // documents, which the import reads itself.
  std::string unsupported;
  CheckV3Extensions(j, {"zarr_format", "node_type", "attributes", "consolidated_metadata"}, nullptr, &unsupported);
  if (!unsupported.empty()) {
    return Err(Status::NotSupported(fmt::format("{}: {}", what, unsupported)));
  }
  return *attrs;
}

std::optional<uint64_t> ParseKeyIndex(std::string_view text) {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) {
      return std::nullopt;
    }
  }
  return v;
}

std::string ChunkKey(const ZarrArray& a, const Dims& coords) {
  if (a.scalar) return a.key_prefix_c ? "c" : "0";
  std::string key = a.key_prefix_c ? "c" : "";
  for (size_t d = 0; d < coords.size(); ++d) {
    if (d > 0 || a.key_prefix_c) key += a.separator;
    key += std::to_string(coords[d]);
  }
  return key;
}

std::string FiltersFor(const ZarrArray& a) {
  bool shuffle = false, checksum = false;
  int deflate = 0;
  const size_t item = ItemSize(a.dtype);
  for (const ZarrCodec& c : a.codecs) {
    switch (c.kind) {
      case ZarrCodec::Kind::kZlib:
      case ZarrCodec::Kind::kGzip:
        if (c.level > 0) deflate = std::max(deflate, std::min(c.level, 9));
        break;
      case ZarrCodec::Kind::kBlosc:
        if (c.level > 0) {
          deflate = std::max(deflate, c.cname == "zlib" ? std::min(c.level, 9) : 1);
          shuffle |= c.shuffle != 0 && item > 1;
        }
        break;
      case ZarrCodec::Kind::kCrc32c: checksum = true; break;
      case ZarrCodec::Kind::kShuffle: shuffle |= item > 1; break;
    }
  }
  std::string out;
  auto add = [&](const std::string& f) { out += (out.empty() ? "" : ",") + f; };
  if (shuffle && deflate > 0) add("shuffle");
  if (deflate > 0) add(fmt::format("deflate={}", deflate));
  if (checksum) add("checksum");
  return out;
}

}  // namespace slabfs::tools::convert
