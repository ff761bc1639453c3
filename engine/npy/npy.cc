#include "slabfs/npy.h"

#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace slabfs {
namespace {

// numpy pads the header so that the first dimension can later grow to this
// many digits in place (numpy/lib/format.py, GROWTH_AXIS_MAX_DIGITS).
constexpr size_t kGrowthAxisMaxDigits = 21;
constexpr size_t kArrayAlign = 64;
constexpr size_t kMagicAndVersionBytes = 8;
constexpr uint64_t kMaxDataBytes = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

struct NpyType {
  std::string_view name;  // "f4"
  DType dtype;
};
constexpr std::array<NpyType, 10> kTypes{{
    {"i1", DType::kI1},
    {"i2", DType::kI2},
    {"i4", DType::kI4},
    {"i8", DType::kI8},
    {"u1", DType::kU1},
    {"u2", DType::kU2},
    {"u4", DType::kU4},
    {"u8", DType::kU8},
    {"f4", DType::kF4},
    {"f8", DType::kF8},
}};

Status Bad(std::string_view what) { return Status::InvalidArgument(fmt::format("not a valid .npy header: {}", what)); }

// Python's repr of a short ASCII string, for messages about hostile input.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 40)) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\' && c != '\'') {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  if (s.size() > 40) out += "...";
  return out + "'";
}

// A tokenizer for the subset of Python literal syntax that numpy writes:
// '{' '}' '(' ')' '[' ':' ',' 'strings' True False and non-negative integers.
class Lexer {
 public:
  enum class Kind { kPunct, kString, kName, kInt, kEnd };
  struct Token {
    Kind kind = Kind::kEnd;
    char punct = 0;
    std::string_view text;  // kString (without quotes), kName
    uint64_t value = 0;     // kInt
  };

  explicit Lexer(std::string_view text) : text_(text) {}

  Result<Token> Next() {
    SkipSpace();
    Token t;
    if (pos_ >= text_.size()) return t;
    char c = text_[pos_];
    if (c == '{' || c == '}' || c == '(' || c == ')' || c == '[' || c == ':' || c == ',') {
      ++pos_;
      t.kind = Kind::kPunct;
      t.punct = c;
      return t;
    }
    if (c == '\'' || c == '"') return LexString(c);
    if (c == '-') return Err(Bad("negative number"));
    if (c >= '0' && c <= '9') return LexInt();
    if (IsNameChar(c)) {
      size_t start = pos_;
      while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
      t.kind = Kind::kName;
      t.text = text_.substr(start, pos_ - start);
      return t;
    }
    return Err(Bad(fmt::format("unexpected character {} at offset {}", Quote(text_.substr(pos_, 1)), pos_)));
  }

  // True when only whitespace remains.
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }

 private:
  static bool IsNameChar(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  Result<Token> LexString(char quote) {
    size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      auto u = static_cast<unsigned char>(text_[pos_]);
      if (u < 0x20 || u >= 0x7f || text_[pos_] == '\\') {
        return Err(Bad("string with an escape or a non-printable character"));
      }
      ++pos_;
    }
    if (pos_ >= text_.size()) return Err(Bad("unterminated string"));
    Token t;
    t.kind = Kind::kString;
    t.text = text_.substr(start, pos_ - start);
    ++pos_;  // the closing quote
    return t;
  }

  Result<Token> LexInt() {
    size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      auto digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, digit, &v)) {
        return Err(Bad(fmt::format("integer {}... does not fit in 64 bits", text_.substr(start, 20))));
      }
      ++pos_;
    }
    // Python 2 wrote long integers as "3L"; numpy still reads such headers.
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
    if (pos_ < text_.size() && (IsNameChar(text_[pos_]) || text_[pos_] == '.')) {
      return Err(Bad("malformed integer"));
    }
    Token t;
    t.kind = Kind::kInt;
    t.value = v;
    return t;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

using Token = Lexer::Token;
using TokenKind = Lexer::Kind;

bool IsPunct(const Token& t, char c) { return t.kind == TokenKind::kPunct && t.punct == c; }

Result<DType> DTypeFromDescr(std::string_view descr) {
  if (descr.size() < 3) return Err(Bad(fmt::format("descr {} is not a type string", Quote(descr))));
  char order = descr[0];
  std::string_view name = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return Err(Bad(fmt::format("descr {} has no byte order character", Quote(descr))));
  }
  std::optional<DType> dtype;
  for (const NpyType& t : kTypes) {
    if (t.name == name) dtype = t.dtype;
  }
  if (!dtype) {
    return Err(Status::NotSupported(
        fmt::format("the .npy dtype {} is not one slabfs holds (i1 i2 i4 i8 u1 u2 u4 u8 f4 f8)", Quote(descr))));
  }
  bool one_byte = name[1] == '1';
  if (!one_byte && order == '>') {
    return Err(Status::NotSupported(
        fmt::format("the .npy holds big-endian data ({}); convert it with arr.astype('<{}')", Quote(descr), name)));
  }
  if (!one_byte && order != '<') {
    return Err(Bad(fmt::format("descr {} has no little-endian byte order", Quote(descr))));
  }
  return *dtype;
}

Result<Dims> ParseShapeTuple(Lexer& lex) {
  SLABFS_ASSIGN_OR_RETURN(Token open, lex.Next());
  if (!IsPunct(open, '(')) return Err(Bad("'shape' is not a tuple"));
  Dims shape;
  bool trailing_comma = false;
  for (;;) {
    SLABFS_ASSIGN_OR_RETURN(Token t, lex.Next());
    if (IsPunct(t, ')')) break;
    if (t.kind != TokenKind::kInt) return Err(Bad("'shape' holds something other than integers"));
    if (shape.size() >= static_cast<size_t>(kMaxRank)) {
      return Err(Status::NotSupported(fmt::format("the .npy has more than {} dimensions", kMaxRank)));
    }
    shape.push_back(t.value);
    SLABFS_ASSIGN_OR_RETURN(Token sep, lex.Next());
    if (IsPunct(sep, ')')) {
      trailing_comma = false;
      break;
    }
    if (!IsPunct(sep, ',')) return Err(Bad("'shape' tuple is malformed"));
    trailing_comma = true;
  }
  // "(5)" is the integer 5 in Python, not a tuple.
  if (shape.size() == 1 && !trailing_comma) return Err(Bad("'shape' is not a tuple"));
  return shape;
}

}  // namespace

bool HasNpyMagic(std::string_view prefix) { return prefix.starts_with(kNpyMagic); }

Result<uint64_t> NpyHeaderLength(std::string_view prefix) {
  if (!HasNpyMagic(prefix)) return Err(Bad("the magic string \\x93NUMPY is missing"));
  if (prefix.size() < kMagicAndVersionBytes) return Err(Bad("truncated before the version"));
  auto major = static_cast<unsigned char>(prefix[6]);
  auto minor = static_cast<unsigned char>(prefix[7]);
  size_t length_bytes = 0;
  if (major == 1 && minor == 0) {
    length_bytes = 2;
  } else if ((major == 2 || major == 3) && minor == 0) {
    length_bytes = 4;
  } else {
    return Err(Bad(fmt::format("unknown format version {}.{}", major, minor)));
  }
  size_t preamble = kMagicAndVersionBytes + length_bytes;
  if (prefix.size() < preamble) return Err(Bad("truncated before the header length"));
  uint64_t dict_bytes = 0;
  for (size_t i = 0; i < length_bytes; ++i) {
    dict_bytes |= uint64_t{static_cast<unsigned char>(prefix[kMagicAndVersionBytes + i])} << (8 * i);
  }
  uint64_t total = preamble + dict_bytes;
  if (total > kNpyMaxHeaderBytes) {
    return Err(Bad(fmt::format("header length {} is over the limit of {} bytes", total, kNpyMaxHeaderBytes)));
  }
  return total;
}

Result<NpyHeader> ParseNpyHeader(std::string_view header) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t total, NpyHeaderLength(header));
  if (header.size() < total) {
    return Err(Bad(fmt::format("truncated: the header is {} bytes but only {} are present", total, header.size())));
  }
  size_t preamble = header[6] == 1 ? 10 : 12;
  Lexer lex(header.substr(preamble, total - preamble));

  SLABFS_ASSIGN_OR_RETURN(Token open, lex.Next());
  if (!IsPunct(open, '{')) return Err(Bad("the header is not a dict"));

  std::optional<DType> dtype;
  std::optional<bool> fortran_order;
  std::optional<Dims> shape;
  for (;;) {
    SLABFS_ASSIGN_OR_RETURN(Token key, lex.Next());
    if (IsPunct(key, '}')) break;
    if (key.kind != TokenKind::kString) return Err(Bad("a dict key is not a string"));
    SLABFS_ASSIGN_OR_RETURN(Token colon, lex.Next());
    if (!IsPunct(colon, ':')) return Err(Bad("a dict key is not followed by ':'"));
    if (key.text == "descr") {
      if (dtype) return Err(Bad("'descr' appears twice"));
      SLABFS_ASSIGN_OR_RETURN(Token v, lex.Next());
      if (IsPunct(v, '[')) {
        return Err(
            Status::NotSupported("the .npy holds a structured dtype (a list descr); slabfs holds plain numbers"));
      }
      if (v.kind != TokenKind::kString) return Err(Bad("'descr' is not a string"));
      SLABFS_ASSIGN_OR_RETURN(dtype, DTypeFromDescr(v.text));
    } else if (key.text == "fortran_order") {
      if (fortran_order) return Err(Bad("'fortran_order' appears twice"));
      SLABFS_ASSIGN_OR_RETURN(Token v, lex.Next());
      if (v.kind != TokenKind::kName || (v.text != "True" && v.text != "False")) {
        return Err(Bad("'fortran_order' is not True or False"));
      }
      fortran_order = v.text == "True";
    } else if (key.text == "shape") {
      if (shape) return Err(Bad("'shape' appears twice"));
      SLABFS_ASSIGN_OR_RETURN(shape, ParseShapeTuple(lex));
    } else {
      return Err(Bad(fmt::format("unexpected key {}", Quote(key.text))));
    }
    SLABFS_ASSIGN_OR_RETURN(Token sep, lex.Next());
    if (IsPunct(sep, '}')) break;
    if (!IsPunct(sep, ',')) return Err(Bad("dict entries are not separated by ','"));
  }
  if (!lex.AtEnd()) return Err(Bad("text after the dict"));
  if (!dtype) return Err(Bad("the key 'descr' is missing"));
  if (!fortran_order) return Err(Bad("the key 'fortran_order' is missing"));
  if (!shape) return Err(Bad("the key 'shape' is missing"));
  if (*fortran_order) {
    return Err(
        Status::NotSupported("the .npy is in Fortran order (fortran_order True); save it with "
                             "numpy.ascontiguousarray(arr) first"));
  }

  NpyHeader h;
  h.dtype = *dtype;
  h.shape = std::move(*shape);
  h.header_bytes = total;
  h.num_elements = 1;
  for (uint64_t d : h.shape) {
    if (__builtin_mul_overflow(h.num_elements, d, &h.num_elements)) {
      return Err(Bad("the element count of 'shape' overflows 64 bits"));
    }
  }
  if (__builtin_mul_overflow(h.num_elements, uint64_t{ItemSize(h.dtype)}, &h.data_bytes) ||
      h.data_bytes > kMaxDataBytes) {
    return Err(Bad("the data size of 'shape' overflows 63 bits"));
  }
  return h;
}

std::string NpyDescr(DType dtype) { return fmt::format("{}{}", ItemSize(dtype) == 1 ? '|' : '<', DTypeName(dtype)); }

std::string EncodeNpyHeader(DType dtype, const Dims& shape) {
  std::string shape_repr = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) shape_repr += ", ";
    shape_repr += fmt::format("{}", shape[i]);
  }
  shape_repr += shape.size() == 1 ? ",)" : ")";

  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", NpyDescr(dtype), shape_repr);
  if (!shape.empty()) {
    size_t digits = fmt::formatted_size("{}", shape[0]);
    dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // Same arithmetic as numpy's _wrap_header: a full extra line of padding
  // when the header is already aligned.
  size_t hlen = dict.size() + 1;  // the final newline
  size_t pad = kArrayAlign - ((kMagicAndVersionBytes + 2 + hlen) % kArrayAlign);
  size_t dict_bytes = hlen + pad;

  std::string out(kNpyMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict_bytes & 0xff);
  out += static_cast<char>((dict_bytes >> 8) & 0xff);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  return out;
}

}  // namespace slabfs
