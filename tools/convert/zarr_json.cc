#include "tools/convert/zarr_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "engine/io/os_error.h"
#include "tools/byte_stream.h"

namespace slabfs::tools::convert {
namespace {

// Non-finite floats travel through nlohmann::json (whose text form has
// none) as these strings, which no real document holds.
constexpr std::string_view kNaN = "\x01slab:NaN\x01";
constexpr std::string_view kInf = "\x01slab:Infinity\x01";
constexpr std::string_view kNegInf = "\x01slab:-Infinity\x01";

// The text nlohmann writes for a marker string (control bytes escaped).
std::string QuotedMarker(std::string_view marker) { return Json(std::string(marker)).dump(); }

// Rewrites Python's bare NaN / Infinity / -Infinity tokens (outside
// strings) as the marker strings, and checks the nesting depth.
Result<std::string> Prepare(std::string_view text, std::string_view what) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    auto token = [&](std::string_view word, std::string_view marker) {
      if (text.substr(i, word.size()) != word) return false;
      out += QuotedMarker(marker);
      i += word.size() - 1;
      return true;
    };
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return Err(Status::Corruption(fmt::format("{}: JSON nested deeper than {} levels", what, kMaxJsonDepth)));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (token("NaN", kNaN) || token("Infinity", kInf) || token("-Infinity", kNegInf)) {
      continue;
    }
    out += c;
  }
  return out;
}

// Replaces the marker strings by the floats they stand for.
void Restore(Json& j) {
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == kNaN)
      j = std::numeric_limits<double>::quiet_NaN();
    else if (s == kInf)
      j = std::numeric_limits<double>::infinity();
    else if (s == kNegInf)
      j = -std::numeric_limits<double>::infinity();
  } else if (j.is_array() || j.is_object()) {
    for (auto& v : j) Restore(v);
  }
}

// The copy of `j` that DumpJson serializes: non-finite floats as markers.
Json Mark(const Json& j) {
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::isnan(d)) return std::string(kNaN);
    if (std::isinf(d)) return std::string(d > 0 ? kInf : kNegInf);
    return j;
  }
  if (j.is_array()) {
    Json out = Json::array();
    for (const auto& v : j) out.push_back(Mark(v));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = Mark(it.value());
    return out;
  }
  return j;
}

// Writes Python's tokens for the marker strings of dumped text: each
// whole string token that is a marker and stands as a value (a key is
// directly followed by ':') becomes NaN, Infinity or -Infinity. Tokens are
// found as JSON reads them, so a marker's text inside a longer string is
// left alone.
std::string RestoreTokens(const std::string& s) {
  const std::string nan = QuotedMarker(kNaN), inf = QuotedMarker(kInf), neg = QuotedMarker(kNegInf);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '"') {
      out += s[i++];
      continue;
    }
    size_t end = i + 1;  // one past the closing quote
    while (end < s.size() && s[end] != '"') end += s[end] == '\\' ? 2 : 1;
    end = std::min(end + 1, s.size());
    const std::string_view token(s.data() + i, end - i);
    const bool value = end >= s.size() || s[end] != ':';
    if (value && token == nan)
      out += "NaN";
    else if (value && token == inf)
      out += "Infinity";
    else if (value && token == neg)
      out += "-Infinity";
    else
      out += token;
    i = end;
  }
  return out;
}

template <typename T>
Attribute NumbersOf(DType t, const std::vector<T>& v) {
  return Attribute::Numbers(t, std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
}

}  // namespace

Result<Json> ParseJson(std::string_view text, std::string_view what) {
  SLABFS_ASSIGN_OR_RETURN(std::string prepared, Prepare(text, what));
  Json j = Json::parse(prepared, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Err(Status::Corruption(fmt::format("{}: not valid JSON", what)));
  Restore(j);
  return j;
}

Result<Json> ReadJsonFile(const std::string& path) {
  // O_NONBLOCK: a FIFO planted in a store must not hang the import.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Err(engine::StatusFromErrno(errno, path));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return Err(engine::StatusFromErrno(e, path));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Err(Status::Corruption(fmt::format("{}: not a regular file", path)));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxMetadataBytes) {
    close(fd);
    return Err(Status::Corruption(fmt::format("{}: {} bytes is too large for Zarr metadata", path, st.st_size)));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  auto got = engine::ReadFully(fd, text.data(), text.size(), path);
  close(fd);
  if (!got) return Err(got.error());
  if (*got < text.size()) return Err(Status::Corruption(fmt::format("{}: shorter than its size", path)));
  return ParseJson(text, path);
}

std::string DumpJson(const Json& j) {
  // ASCII only, other characters as \uXXXX escapes: zarr-python 2 reads
  // metadata as ASCII (and writes it so).
  std::string s = Mark(j).dump(4, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
  if (s.find("slab:") != std::string::npos) s = RestoreTokens(s);
  return s + "\n";
}

bool IsUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Result<Attribute> AttributeFromJson(const Json& v) {
  Attribute a;
  if (v.is_string()) {
    a = Attribute::String(v.get<std::string>());
  } else if (v.is_boolean()) {
    a = NumbersOf(DType::kI1, std::vector<int8_t>{static_cast<int8_t>(v.get<bool>())});
  } else if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    a = NumbersOf(DType::kU8, std::vector<uint64_t>{v.get<uint64_t>()});
  } else if (v.is_number_integer()) {
    a = Attribute::Integer(v.get<int64_t>());
  } else if (v.is_number_float()) {
    a = Attribute::Float(v.get<double>());
  } else {
    // A flat, non-empty array of numbers, or of booleans, stays numeric.
    bool numeric = v.is_array() && !v.empty();
    bool all_bool = numeric, any_float = false, any_big = false, any_negative = false;
    if (numeric) {
      for (const auto& e : v) {
        if (e.is_boolean()) {
          continue;
        }
        all_bool = false;
        if (!e.is_number()) {
          numeric = false;
          break;
        }
        if (e.is_number_float())
          any_float = true;
        else if (e.is_number_unsigned()) {
          any_big |= e.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        } else {
          any_negative |= e.get<int64_t>() < 0;
        }
      }
      // Booleans mixed with numbers: no one dtype says what they were.
      if (!all_bool) {
        for (const auto& e : v) numeric &= !e.is_boolean();
      }
    }
    if (numeric && all_bool) {
      std::vector<int8_t> out;
      for (const auto& e : v) out.push_back(static_cast<int8_t>(e.get<bool>()));
      a = NumbersOf(DType::kI1, out);
    } else if (numeric && (any_float || (any_big && any_negative))) {
      std::vector<double> out;
      for (const auto& e : v) out.push_back(e.get<double>());
      a = NumbersOf(DType::kF8, out);
    } else if (numeric && any_big) {
      std::vector<uint64_t> out;
      for (const auto& e : v) out.push_back(e.get<uint64_t>());
      a = NumbersOf(DType::kU8, out);
    } else if (numeric) {
      std::vector<int64_t> out;
      for (const auto& e : v) out.push_back(e.get<int64_t>());
      a = NumbersOf(DType::kI8, out);
    } else {
      a = Attribute::String(v.dump());
    }
  }
  if (a.data.size() > kMaxAttributeBytes) {
    return Err(Status::InvalidArgument(fmt::format("its value takes {} bytes, over the {} bytes an attribute may hold",
                                                   a.data.size(), kMaxAttributeBytes)));
  }
  return a;
}

Json AttributeToJson(const Attribute& a) {
  if (a.kind == Attribute::Kind::kString) return a.data;
  const size_t item = ItemSize(a.dtype);
  Json values = Json::array();
  for (size_t i = 0; i + item <= a.data.size(); i += item) {
    const char* p = a.data.data() + i;
    switch (a.dtype) {
      case DType::kI1: {
        int8_t v;
        std::memcpy(&v, p, 1);
        values.push_back(v);
        break;
      }
      case DType::kI2: {
        int16_t v;
        std::memcpy(&v, p, 2);
        values.push_back(v);
        break;
      }
      case DType::kI4: {
        int32_t v;
        std::memcpy(&v, p, 4);
        values.push_back(v);
        break;
      }
      case DType::kI8: {
        int64_t v;
        std::memcpy(&v, p, 8);
        values.push_back(v);
        break;
      }
      case DType::kU1: {
        uint8_t v;
        std::memcpy(&v, p, 1);
        values.push_back(v);
        break;
      }
      case DType::kU2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        values.push_back(v);
        break;
      }
      case DType::kU4: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        values.push_back(v);
        break;
      }
      case DType::kU8: {
        uint64_t v;
        std::memcpy(&v, p, 8);
        values.push_back(v);
        break;
      }
      case DType::kF4: {
        float v;
        std::memcpy(&v, p, 4);
        values.push_back(static_cast<double>(v));
        break;
      }
      case DType::kF8: {
        double v;
        std::memcpy(&v, p, 8);
        values.push_back(v);
        break;
      }
    }
  }
  if (values.size() == 1) return values[0];
  return values;
}

}  // namespace slabfs::tools::convert
