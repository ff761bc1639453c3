#include "slabfs/npy.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs {
namespace {

// The header numpy writes: preamble, dict, spaces to 127 bytes, newline.
std::string NumpyHeader(const std::string& dict) {
  std::string h("\x93NUMPY\x01\x00v\x00", 10);
  h += dict;
  h.resize(127, ' ');
  h += '\n';
  return h;
}

// A version 1.0 header around an arbitrary dict text.
std::string HeaderV1(const std::string& dict) {
  std::string h("\x93NUMPY\x01\x00", 8);
  h += static_cast<char>(dict.size() & 0xff);
  h += static_cast<char>(dict.size() >> 8);
  return h + dict;
}

std::string HeaderV2(const std::string& dict, char major = 2) {
  std::string h("\x93NUMPY", 6);
  h += major;
  h += '\0';
  uint32_t n = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < 4; ++i) h += static_cast<char>((n >> (8 * i)) & 0xff);
  return h + dict;
}

const std::vector<DType> kAllTypes = {DType::kI1, DType::kI2, DType::kI4, DType::kI8, DType::kU1,
                                      DType::kU2, DType::kU4, DType::kU8, DType::kF4, DType::kF8};

TEST(NpyTest, EncodesHeaderByteForByteLikeNumpy) {
  EXPECT_EQ(EncodeNpyHeader(DType::kF4, {3, 4}),
            NumpyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"));
  EXPECT_EQ(EncodeNpyHeader(DType::kU1, {5}), NumpyHeader("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }"));
  EXPECT_EQ(EncodeNpyHeader(DType::kI8, {2, 3, 4}),
            NumpyHeader("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3, 4), }"));
  EXPECT_EQ(EncodeNpyHeader(DType::kF8, {123456789012, 1}),
            NumpyHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (123456789012, 1), }"));
}

TEST(NpyTest, DescrUsesPipeForSingleBytes) {
  EXPECT_EQ(NpyDescr(DType::kI1), "|i1");
  EXPECT_EQ(NpyDescr(DType::kU1), "|u1");
  EXPECT_EQ(NpyDescr(DType::kU2), "<u2");
  EXPECT_EQ(NpyDescr(DType::kF8), "<f8");
}

TEST(NpyTest, RoundTripsEveryDtypeAndRank) {
  for (DType t : kAllTypes) {
    for (int rank = 1; rank <= kMaxRank; ++rank) {
      Dims shape;
      for (int d = 0; d < rank; ++d) shape.push_back(d < 3 ? 7 + d : 1);
      std::string h = EncodeNpyHeader(t, shape);
      EXPECT_EQ(h.size() % 64, 0u);
      auto parsed = ParseNpyHeader(h);
      ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
      EXPECT_EQ(parsed->dtype, t);
      EXPECT_EQ(parsed->shape, shape);
      EXPECT_EQ(parsed->header_bytes, h.size());
      uint64_t n = 1;
      for (uint64_t d : shape) n *= d;
      EXPECT_EQ(parsed->num_elements, n);
      EXPECT_EQ(parsed->data_bytes, n * ItemSize(t));
    }
  }
}

TEST(NpyTest, RoundTripsLargeDimensions) {
  Dims shape = {uint64_t{1} << 40, 3};
  auto parsed = ParseNpyHeader(EncodeNpyHeader(DType::kU2, shape));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(parsed->shape, shape);
  EXPECT_EQ(parsed->data_bytes, (uint64_t{1} << 40) * 3 * 2);
}

TEST(NpyTest, HeaderLengthComesFromThePreamble) {
  std::string h = EncodeNpyHeader(DType::kF4, {3, 4});
  auto len = NpyHeaderLength(h.substr(0, kNpyMaxPreambleBytes));
  ASSERT_TRUE(len.has_value());
  EXPECT_EQ(*len, h.size());
}

TEST(NpyTest, ParsesZeroDimensionalArray) {
  auto parsed = ParseNpyHeader(HeaderV1("{'descr': '<f8', 'fortran_order': False, 'shape': (), }"));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_TRUE(parsed->shape.empty());
  EXPECT_EQ(parsed->num_elements, 1u);
  EXPECT_EQ(parsed->data_bytes, 8u);
}

TEST(NpyTest, ParsesZeroLengthDimension) {
  auto parsed = ParseNpyHeader(HeaderV1("{'descr': '<i4', 'fortran_order': False, 'shape': (0, 5)}"));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(parsed->num_elements, 0u);
}

TEST(NpyTest, AcceptsOtherSpellingsNumpyReads) {
  const char* dicts[] = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<u2'}",          // any key order
      "{\"descr\": \"<u2\", \"fortran_order\": False, \"shape\": (2, 3)}",  // double quotes
      "{'descr':'<u2','fortran_order':False,'shape':(2,3,)}",               // no spaces
      "{'descr': '<u2', 'fortran_order': False, 'shape': (2L, 3L)}  \n",    // Python 2 longs
      "{\n 'descr': '<u2',\n 'fortran_order': False,\n 'shape': (2, 3),\n}\n",
  };
  for (const char* d : dicts) {
    auto parsed = ParseNpyHeader(HeaderV1(d));
    ASSERT_TRUE(parsed.has_value()) << d << ": " << parsed.error().ToString();
    EXPECT_EQ(parsed->dtype, DType::kU2);
    EXPECT_EQ(parsed->shape, (Dims{2, 3}));
  }
}

TEST(NpyTest, AcceptsVersions2And3) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n";
  for (char major : {'\x02', '\x03'}) {
    std::string h = HeaderV2(dict, major);
    auto parsed = ParseNpyHeader(h);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
    EXPECT_EQ(parsed->header_bytes, h.size());
    EXPECT_EQ(parsed->shape, Dims{4});
  }
}

TEST(NpyTest, AcceptsAnyByteOrderForSingleBytes) {
  for (const char* descr : {"|u1", "<u1", ">u1", "=i1"}) {
    auto parsed =
        ParseNpyHeader(HeaderV1(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,)}"));
    EXPECT_TRUE(parsed.has_value()) << descr;
  }
}

TEST(NpyTest, RejectsBadMagic) {
  std::string h = EncodeNpyHeader(DType::kF4, {3});
  h[1] = 'n';
  EXPECT_FALSE(HasNpyMagic(h));
  auto parsed = ParseNpyHeader(h);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code(), Code::kInvalidArgument);
  EXPECT_FALSE(ParseNpyHeader("").has_value());
  EXPECT_FALSE(ParseNpyHeader("PK\x03\x04 not npy").has_value());
}

TEST(NpyTest, RejectsUnknownVersion) {
  std::string h = EncodeNpyHeader(DType::kF4, {3});
  const std::pair<int, int> versions[] = {{0, 0}, {1, 1}, {4, 0}, {255, 255}};
  for (auto [major, minor] : versions) {
    h[6] = static_cast<char>(major);
    h[7] = static_cast<char>(minor);
    auto parsed = ParseNpyHeader(h);
    ASSERT_FALSE(parsed.has_value());
    EXPECT_NE(parsed.error().message().find("version"), std::string::npos);
  }
}

TEST(NpyTest, RejectsTruncatedHeaderAtEveryLength) {
  std::string h = EncodeNpyHeader(DType::kI2, {10, 20});
  for (size_t n = 0; n < h.size(); ++n) {
    auto parsed = ParseNpyHeader(h.substr(0, n));
    ASSERT_FALSE(parsed.has_value()) << "prefix of " << n << " bytes";
    EXPECT_EQ(parsed.error().code(), Code::kInvalidArgument);
  }
}

TEST(NpyTest, RejectsHeaderLengthOverLimit) {
  std::string h("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);
  auto len = NpyHeaderLength(h);
  ASSERT_FALSE(len.has_value());
  EXPECT_NE(len.error().message().find("limit"), std::string::npos);
  auto parsed = ParseNpyHeader(h);
  EXPECT_FALSE(parsed.has_value());
}

TEST(NpyTest, RejectsBadDicts) {
  using namespace std::string_literals;
  const std::string dicts[] = {
      "",
      "not a dict",
      "['descr', 'fortran_order', 'shape']",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)",  // unterminated
      "{'descr': '<f4', 'fortran_order': False}",                // missing shape
      "{'fortran_order': False, 'shape': (3,)}",                 // missing descr
      "{'descr': '<f4', 'shape': (3,)}",                         // missing fortran_order
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",
      "{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}",
      "{'descr': '<f4', 'fortran_order': false, 'shape': (3,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3)}",  // an int, not a tuple
      "{'descr': '<f4', 'fortran_order': False, 'shape': [3]}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': 3}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3.5,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': ('3',)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4) 'x'}",
      "{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}}",
      "{'descr': 5, 'fortran_order': False, 'shape': (3,)}",
      "{'descr': 'f4', 'fortran_order': False, 'shape': (3,)}",
      "{'descr': '<f4\\x00', 'fortran_order': False, 'shape': (3,)}",
      "{'descr: '<f4', 'fortran_order': False, 'shape': (3,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
      "{3: '<f4', 'fortran_order': False, 'shape': (3,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\x00"s,
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\xff",
      "{'descr': '\xe9', 'fortran_order': False, 'shape': (3,)}",
  };
  for (const std::string& d : dicts) {
    auto parsed = ParseNpyHeader(HeaderV1(d));
    ASSERT_FALSE(parsed.has_value()) << d;
    EXPECT_EQ(parsed.error().code(), Code::kInvalidArgument) << d << ": " << parsed.error().ToString();
  }
}

TEST(NpyTest, RejectsOverflowingShape) {
  const char* dicts[] = {
      // 2^32 * 2^32 elements
      "{'descr': '<u1', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
      // 2^62 elements of 8 bytes
      "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}",
      // fits in 64 bits of elements but 2^63 bytes
      "{'descr': '<u2', 'fortran_order': False, 'shape': (4611686018427387904,)}",
      "{'descr': '<u1', 'fortran_order': False, 'shape': (18446744073709551615, 2)}",
  };
  for (const char* d : dicts) {
    auto parsed = ParseNpyHeader(HeaderV1(d));
    ASSERT_FALSE(parsed.has_value()) << d;
    EXPECT_NE(parsed.error().message().find("overflows"), std::string::npos) << parsed.error().message();
  }
}

TEST(NpyTest, RejectsTooManyDimensions) {
  std::string shape = "(";
  for (int i = 0; i <= kMaxRank; ++i) shape += "1, ";
  shape += ")";
  auto parsed = ParseNpyHeader(HeaderV1("{'descr': '<u1', 'fortran_order': False, 'shape': " + shape + "}"));
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code(), Code::kNotSupported);
}

TEST(NpyTest, RejectsFortranOrder) {
  auto parsed = ParseNpyHeader(HeaderV1("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }"));
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code(), Code::kNotSupported);
  EXPECT_NE(parsed.error().message().find("Fortran"), std::string::npos);
}

TEST(NpyTest, RejectsTypesSlabfsDoesNotHold) {
  for (const char* descr :
       {">f4", ">i8", "<c8", "<f2", "|b1", "<U10", "|S5", "|O", "<M8[s]", "<f16", "|V8", "=f4", "|f4"}) {
    auto parsed =
        ParseNpyHeader(HeaderV1(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (3,)}"));
    ASSERT_FALSE(parsed.has_value()) << descr;
  }
  auto structured =
      ParseNpyHeader(HeaderV1("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (3,)}"));
  ASSERT_FALSE(structured.has_value());
  EXPECT_EQ(structured.error().code(), Code::kNotSupported);
  auto big = ParseNpyHeader(HeaderV1("{'descr': '>f4', 'fortran_order': False, 'shape': (3,)}"));
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().message().find("big-endian"), std::string::npos);
}

// Random damage to a valid header never crashes the parser and never yields
// a header whose sizes are inconsistent.
TEST(NpyTest, SurvivesRandomCorruption) {
  std::mt19937_64 rng(20240601);
  std::string good = EncodeNpyHeader(DType::kF8, {1000, 2000, 3});
  for (int iter = 0; iter < 20000; ++iter) {
    std::string h = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) h[rng() % h.size()] = static_cast<char>(rng() & 0xff);
    if (rng() % 4 == 0) h.resize(rng() % h.size());
    auto parsed = ParseNpyHeader(h);
    if (parsed.has_value()) {
      EXPECT_LE(parsed->header_bytes, h.size());
      EXPECT_LE(parsed->shape.size(), static_cast<size_t>(kMaxRank));
      EXPECT_EQ(parsed->data_bytes, parsed->num_elements * ItemSize(parsed->dtype));
    }
  }
}

}  // namespace
}  // namespace slabfs
