// The pieces of the Zarr import and export: codecs (round trips, damaged
// and wrong-sized input), metadata parsing (valid, unsupported, invalid),
// chunk keys, fill values and the JSON / attribute mapping. The end-to-end
// checks against zarr-python are in tests/integration/test_convert_zarr.py.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "slabfs/checksum.h"

#include "tools/convert/scalar.h"
#include "tools/convert/zarr_codecs.h"
#include "tools/convert/zarr_json.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::tools::convert {
namespace {

std::string Sample(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7) % 13 + (i / 100));
  return s;
}

ZarrCodec Codec(ZarrCodec::Kind kind, int level = 1, std::string cname = "", int shuffle = 0) {
  ZarrCodec c;
  c.kind = kind;
  c.level = level;
  c.cname = std::move(cname);
  c.shuffle = shuffle;
  c.typesize = 4;
  return c;
}

std::vector<std::vector<ZarrCodec>> Pipelines() {
  using K = ZarrCodec::Kind;
  return {{},
          {Codec(K::kZlib, 5)},
          {Codec(K::kGzip, 9)},
          {Codec(K::kBlosc, 5, "lz4", 1)},
          {Codec(K::kBlosc, 3, "zstd", 2)},
          {Codec(K::kBlosc, 1, "zlib", 1), Codec(K::kCrc32c)},
          {Codec(K::kCrc32c), Codec(K::kGzip, 1)},
          // Two compressors (valid v3): the inner one's size is not known
          // before it is decoded.
          {Codec(K::kBlosc, 5, "lz4", 1), Codec(K::kGzip, 3)},
          {Codec(K::kShuffle), Codec(K::kZlib, 1), Codec(K::kCrc32c), Codec(K::kBlosc, 1, "zstd", 0)}};
}

TEST(ZarrCodecsTest, RoundTripsEveryPipeline) {
  const std::string raw = Sample(10000);
  for (const auto& p : Pipelines()) {
    auto enc = EncodeChunk(p, raw);
    ASSERT_TRUE(enc.has_value()) << enc.error().ToString();
    std::string out;
    ASSERT_TRUE(DecodeChunk(p, *enc, raw.size(), "k", &out).ok());
    EXPECT_EQ(out, raw);
  }
}

TEST(ZarrCodecsTest, DecodesStraightIntoTheCallersBuffer) {
  // As the mount's reads do: into a cache buffer, or into the reader's.
  const std::string raw = Sample(10000);
  for (const auto& p : Pipelines()) {
    auto enc = EncodeChunk(p, raw);
    ASSERT_TRUE(enc.has_value()) << enc.error().ToString();
    std::string out(raw.size(), '?');
    ASSERT_TRUE(DecodeChunk(p, *enc, raw.size(), "k", out.data()).ok());
    EXPECT_EQ(out, raw);
  }
}

TEST(ZarrCodecsTest, AnEmptyChunkDecodesThroughEveryStep) {
  // Steps of no bytes get no scratch memory (a fuzzer found a shuffle of
  // an empty chunk copying from a null buffer).
  using K = ZarrCodec::Kind;
  ZarrCodec wide = Codec(K::kShuffle);
  wide.typesize = 16;
  for (const std::vector<ZarrCodec>& p : std::vector<std::vector<ZarrCodec>>{
           {wide, wide, wide}, {Codec(K::kShuffle), Codec(K::kCrc32c)}, {Codec(K::kShuffle), Codec(K::kZlib, 3)}}) {
    auto enc = EncodeChunk(p, "");
    ASSERT_TRUE(enc.has_value()) << enc.error().ToString();
    std::string out = "not empty";
    ASSERT_TRUE(DecodeChunk(p, *enc, 0, "k", &out).ok());
    EXPECT_EQ(out, "");
  }
}

TEST(ZarrCodecsTest, RejectsTruncatedDamagedAndWrongSizedChunks) {
  const std::string raw = Sample(4096);
  for (const auto& p : Pipelines()) {
    auto enc = EncodeChunk(p, raw);
    ASSERT_TRUE(enc.has_value());
    std::string out;
    // Another expected size.
    EXPECT_EQ(DecodeChunk(p, *enc, raw.size() - 4, "k", &out).code(), Code::kCorruption);
    EXPECT_EQ(DecodeChunk(p, *enc, raw.size() + 4, "k", &out).code(), Code::kCorruption);
    // Every truncation.
    for (size_t cut : {size_t{0}, size_t{1}, size_t{3}, size_t{15}, enc->size() / 2, enc->size() - 1}) {
      if (cut >= enc->size()) continue;
      Status s = DecodeChunk(p, enc->substr(0, cut), raw.size(), "key/0.1", &out);
      EXPECT_EQ(s.code(), Code::kCorruption) << cut;
      EXPECT_NE(s.message().find("key/0.1"), std::string::npos) << s.message();
    }
  }
}

TEST(ZarrCodecsTest, ChecksumCatchesAFlippedBit) {
  const std::vector<ZarrCodec> p{Codec(ZarrCodec::Kind::kCrc32c)};
  auto enc = EncodeChunk(p, Sample(100));
  ASSERT_TRUE(enc.has_value());
  (*enc)[50] ^= 1;
  std::string out;
  Status s = DecodeChunk(p, *enc, 100, "k", &out);
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.message().find("CRC-32C"), std::string::npos);
}

TEST(ZarrCodecsTest, Crc32cMatchesTheCheckValue) {
  EXPECT_EQ(slabfs::Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(slabfs::Crc32c("", 0), 0u);
}

TEST(ZarrCodecsTest, SwapsBytesOfEachElement) {
  std::string s = "\x01\x02\x03\x04\x05\x06\x07\x08";
  SwapBytes(s.data(), s.size(), 4);
  EXPECT_EQ(s, std::string("\x04\x03\x02\x01\x08\x07\x06\x05"));
  SwapBytes(s.data(), s.size(), 8);
  EXPECT_EQ(s, std::string("\x05\x06\x07\x08\x01\x02\x03\x04"));
}

TEST(ZarrCodecsTest, UntransposesFOrderAndPermutations) {
  // A of shape (2, 3, 4), A[i][j][k] = 100i + 10j + k; B = transpose(A, order).
  const Dims a_shape{2, 3, 4};
  for (std::vector<size_t> order : {std::vector<size_t>{2, 1, 0}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}}) {
    Dims b_shape(3);
    for (size_t i = 0; i < 3; ++i) b_shape[i] = a_shape[order[i]];
    std::vector<int32_t> b(24);
    for (uint64_t q0 = 0; q0 < b_shape[0]; ++q0)
      for (uint64_t q1 = 0; q1 < b_shape[1]; ++q1)
        for (uint64_t q2 = 0; q2 < b_shape[2]; ++q2) {
          uint64_t q[3] = {q0, q1, q2}, p[3];
          for (size_t i = 0; i < 3; ++i) p[order[i]] = q[i];
          b[(q0 * b_shape[1] + q1) * b_shape[2] + q2] = static_cast<int32_t>(100 * p[0] + 10 * p[1] + p[2]);
        }
    std::vector<int32_t> a(24);
    Untranspose(reinterpret_cast<const char*>(b.data()), a_shape, order, 4, reinterpret_cast<char*>(a.data()));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) EXPECT_EQ(a[(i * 3 + j) * 4 + k], 100 * i + 10 * j + k);
  }
}

Json V2(std::string_view extra = "") {
  std::string text = R"({"zarr_format": 2, "shape": [10, 20], "chunks": [4, 8], "dtype": ">i2",
    "fill_value": -3, "order": "C", "filters": null, "dimension_separator": "/",
    "compressor": {"id": "blosc", "cname": "zlib", "clevel": 4, "shuffle": -1, "blocksize": 0})";
  text += extra;
  text += "}";
  return *ParseJson(text, "t");
}

TEST(ZarrMetadataTest, ParsesAV2Array) {
  auto p = ParseZarray(V2(), ".zarray");
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  const ZarrArray& a = p->array;
  EXPECT_TRUE(p->unsupported.empty());
  EXPECT_EQ(a.dtype, DType::kI2);
  EXPECT_TRUE(a.big_endian);
  EXPECT_EQ(a.shape, (Dims{10, 20}));
  EXPECT_EQ(a.chunks, (Dims{4, 8}));
  EXPECT_EQ(a.separator, '/');
  int16_t fill;
  std::memcpy(&fill, a.fill.data(), 2);
  EXPECT_EQ(fill, -3);
  ASSERT_EQ(a.codecs.size(), 1u);
  EXPECT_EQ(a.codecs[0].shuffle, 1);  // automatic: byte shuffle for 2-byte elements
  EXPECT_EQ(FiltersFor(a), "shuffle,deflate=4");
  EXPECT_EQ(ChunkKey(a, {2, 13}), "2/13");
  // An integral float fill fits an integer dtype.
  auto f = ParseZarray(V2(R"(, "fill_value": -4.0)"), ".zarray");
  ASSERT_TRUE(f.has_value());
  std::memcpy(&fill, f->array.fill.data(), 2);
  EXPECT_EQ(fill, -4);
}

TEST(ZarrMetadataTest, NamesWhatSlabfsCannotHold) {
  for (auto [field, why] :
       std::vector<std::pair<std::string, std::string>>{{R"("dtype": "|b1")", "bool"},
                                                        {R"("dtype": "<c16")", "complex"},
                                                        {R"("dtype": [["a", "<i4"]])", "structured"},
                                                        {R"("compressor": {"id": "lzma"})", "lzma"},
                                                        {R"("filters": [{"id": "delta"}])", "delta"},
                                                        {R"("chunks": [100000, 100000])", "1 GiB"}}) {
    std::string text = R"({"zarr_format": 2, "shape": [10, 20], "chunks": [4, 8], "dtype": "<f4",
      "fill_value": 0, "order": "C", "compressor": null, )" +
                       field + "}";
    auto p = ParseZarray(*ParseJson(text, "t"), "t");
    ASSERT_TRUE(p.has_value()) << field << ": " << p.error().ToString();
    EXPECT_NE(p->unsupported.find(why), std::string::npos) << field << ": " << p->unsupported;
  }
}

TEST(ZarrMetadataTest, RejectsInvalidMetadata) {
  for (std::string field :
       {R"("shape": [-1, 20])", R"("shape": [1.5, 20])", R"("shape": "big")", R"("chunks": [0, 8])", R"("chunks": [4])",
        R"("order": "K")", R"("fill_value": "many")", R"("fill_value": 70000)", R"("fill_value": -9.3e18)",
        R"("fill_value": 1e30)", R"("fill_value": 2.5)", R"("fill_value": [1])",
        R"("shape": [4294967296, 4294967296, 4294967296])", R"("dimension_separator": "-")", R"("zarr_format": 3)",
        R"("compressor": {"id": "zlib", "level": 12})"}) {
    auto p = ParseZarray(V2("," + field), ".zarray");
    // Later members replace earlier ones in nlohmann's parse.
    ASSERT_FALSE(p.has_value()) << field;
    EXPECT_EQ(p.error().code(), Code::kCorruption) << field;
  }
}

TEST(ZarrMetadataTest, ParsesAV3ArrayWithCodecs) {
  auto j = ParseJson(R"({"zarr_format": 3, "node_type": "array", "shape": [5, 6],
    "data_type": "float64", "fill_value": "0x7ff8000000000001",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
    "chunk_key_encoding": {"name": "default"},
    "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "bytes", "configuration": {"endian": "big"}},
               {"name": "gzip", "configuration": {"level": 3}}, "crc32c"],
    "dimension_names": ["y", null], "attributes": {"a": 1},
    "ext": {"must_understand": false}})",
                     "t");
  ASSERT_TRUE(j.has_value());
  auto p = ParseV3Array(*j, "zarr.json");
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_TRUE(p->unsupported.empty()) << p->unsupported;
  const ZarrArray& a = p->array;
  EXPECT_EQ(a.transpose, (std::vector<size_t>{1, 0}));
  EXPECT_TRUE(a.big_endian);
  EXPECT_EQ(FiltersFor(a), "deflate=3,checksum");
  EXPECT_EQ(ChunkKey(a, {1, 0}), "c/1/0");
  uint64_t bits;
  std::memcpy(&bits, a.fill.data(), 8);
  EXPECT_EQ(bits, 0x7ff8000000000001ull);
  EXPECT_EQ(FillToJson(DType::kF8, a.fill, 3), Json("0x7ff8000000000001"));
  EXPECT_EQ(FillToJson(DType::kF8, a.fill, 2), Json("NaN"));
}

TEST(ZarrMetadataTest, HoldsA0dArrayAsAScalar) {
  auto v2 = ParseZarray(*ParseJson(R"({"zarr_format": 2, "shape": [], "chunks": [],
    "dtype": "<f8", "fill_value": 1.5, "order": "F", "compressor": null, "filters": null})",
                                   "t"),
                        ".zarray");
  ASSERT_TRUE(v2.has_value()) << v2.error().ToString();
  EXPECT_TRUE(v2->unsupported.empty()) << v2->unsupported;
  EXPECT_TRUE(v2->array.scalar);
  EXPECT_EQ(v2->array.shape, Dims{1});
  EXPECT_EQ(v2->array.chunks, Dims{1});
  EXPECT_TRUE(v2->array.transpose.empty());
  EXPECT_EQ(ChunkKey(v2->array, {0}), "0");
  // A chunk shape of another rank is still wrong.
  auto bad = ParseZarray(*ParseJson(R"({"zarr_format": 2, "shape": [], "chunks": [1],
    "dtype": "<f8", "fill_value": 0, "order": "C", "compressor": null})",
                                    "t"),
                         ".zarray");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kCorruption);

  auto j = ParseJson(R"({"zarr_format": 3, "node_type": "array", "shape": [],
    "data_type": "int32", "fill_value": 7,
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}},
    "chunk_key_encoding": {"name": "default"},
    "codecs": [{"name": "transpose", "configuration": {"order": []}},
               {"name": "bytes", "configuration": {"endian": "little"}}],
    "dimension_names": []})",
                     "t");
  auto v3 = ParseV3Array(*j, "zarr.json");
  ASSERT_TRUE(v3.has_value()) << v3.error().ToString();
  EXPECT_TRUE(v3->unsupported.empty()) << v3->unsupported;
  EXPECT_TRUE(v3->array.scalar);
  EXPECT_EQ(v3->array.shape, Dims{1});
  EXPECT_EQ(ChunkKey(v3->array, {0}), "c");
  (*j)["chunk_key_encoding"] = Json({{"name", "v2"}});
  EXPECT_EQ(ChunkKey(ParseV3Array(*j, "zarr.json")->array, {0}), "0");
}

TEST(ScalarTest, ExportedScalarIsFixedShapeOneWithTheMarker) {
  DatasetOptions o;
  o.shape = {5};
  o.filters = "deflate=4";
  MakeScalarOptions(&o);
  EXPECT_EQ(o.shape, Dims{1});
  EXPECT_EQ(o.max_shape, Dims{1});
  EXPECT_EQ(o.chunks, Dims{1});
  EXPECT_TRUE(o.filters.empty());
  EXPECT_EQ(ScalarMarker().kind, Attribute::Kind::kNumeric);

  DatasetInfo info;
  info.shape = info.max_shape = {1};
  const std::vector<std::string> marked{"units", std::string(kScalarAttribute)};
  EXPECT_TRUE(IsExportedScalar(info, marked));
  EXPECT_FALSE(IsExportedScalar(info, {"units"}));
  info.max_shape = {kUnlimited};  // could grow: not a scalar
  EXPECT_FALSE(IsExportedScalar(info, marked));
  info.shape = info.max_shape = {1, 1};
  EXPECT_FALSE(IsExportedScalar(info, marked));
  info.shape = info.max_shape = {2};
  EXPECT_FALSE(IsExportedScalar(info, marked));
}

TEST(ZarrMetadataTest, ChunkKeyIndexesAreCanonicalDecimals) {
  EXPECT_EQ(ParseKeyIndex("0"), 0u);
  EXPECT_EQ(ParseKeyIndex("123"), 123u);
  EXPECT_EQ(ParseKeyIndex("18446744073709551615"), 18446744073709551615ull);
  for (const char* bad : {"", "01", "-1", "+1", "1a", "18446744073709551616", " 1"}) {
    EXPECT_FALSE(ParseKeyIndex(bad).has_value()) << bad;
  }
}

TEST(ZarrMetadataTest, ExportEncodingFollowsTheFilters) {
  DatasetInfo info;
  info.dtype = DType::kF4;
  info.filters = "shuffle,deflate=3,checksum";
  ExportEncoding v2 = EncodingFor(info, 2);
  EXPECT_EQ(v2.metadata["id"], "blosc");
  EXPECT_EQ(v2.metadata["cname"], "zlib");
  EXPECT_EQ(v2.metadata["shuffle"], 1);
  EXPECT_FALSE(v2.note.empty());
  ExportEncoding v3 = EncodingFor(info, 3);
  ASSERT_EQ(v3.metadata.size(), 3u);
  EXPECT_EQ(v3.metadata[2]["name"], "crc32c");
  info.filters = "deflate=7";
  EXPECT_EQ(EncodingFor(info, 2).metadata, Json({{"id", "zlib"}, {"level", 7}}));
  EXPECT_EQ(EncodingFor(info, 3).metadata[1], Json({{"name", "gzip"}, {"configuration", {{"level", 7}}}}));
  info.filters = "";
  EXPECT_TRUE(EncodingFor(info, 2).metadata.is_null());
}

TEST(ZarrJsonTest, ReadsAndWritesPythonsNonFiniteFloats) {
  auto j = ParseJson(R"({"a": NaN, "b": [Infinity, -Infinity], "s": "NaN"})", "t");
  ASSERT_TRUE(j.has_value());
  EXPECT_TRUE(std::isnan((*j)["a"].get<double>()));
  EXPECT_EQ((*j)["b"][1].get<double>(), -INFINITY);
  EXPECT_EQ((*j)["s"], "NaN");
  std::string text = DumpJson(*j);
  EXPECT_NE(text.find("\"a\": NaN"), std::string::npos) << text;
  EXPECT_NE(text.find("-Infinity"), std::string::npos) << text;
  auto back = ParseJson(text, "t");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ((*back)["s"], "NaN");
}

TEST(ZarrJsonTest, RejectsBadAndDeeplyNestedJson) {
  EXPECT_EQ(ParseJson("{\"a\": ", "t").error().code(), Code::kCorruption);
  EXPECT_EQ(ParseJson("Nonsense", "t").error().code(), Code::kCorruption);
  EXPECT_EQ(ParseJson(std::string(1000, '[') + std::string(1000, ']'), "t").error().code(), Code::kCorruption);
  EXPECT_TRUE(ParseJson(std::string(60, '[') + std::string(60, ']'), "t").has_value());
}

TEST(ZarrJsonTest, TellsWellFormedUtf8) {
  for (std::string ok : {"", "plain", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_TRUE(IsUtf8(ok)) << ok;
  }
  for (std::string bad : {"\xff", "a\x80", "\xc3", "\xc0\xaf" /* overlong */, "\xe0\x80\xaf",
                          "\xed\xa0\x80" /* surrogate */, "\xf4\x90\x80\x80" /* past U+10FFFF */, "\xe2\x82"}) {
    EXPECT_FALSE(IsUtf8(bad)) << bad;
  }
}

TEST(ZarrJsonTest, DumpsBytesThatAreNotUtf8AsReplacementCharacters) {
  // A container attribute may hold any bytes; JSON text may not.
  Json j = {{"a\xff"
             "b",
             "x\xc3y"},
            {"ok", AttributeToJson(Attribute::String("\x80"))}};
  std::string text;
  ASSERT_NO_THROW(text = DumpJson(j));
  // ASCII only, as zarr-python 2 reads metadata.
  for (char c : text) EXPECT_GE(c, 0) << text;
  auto back = ParseJson(text, "t");
  ASSERT_TRUE(back.has_value()) << text;
  EXPECT_EQ((*back)["a\xef\xbf\xbd"
                    "b"],
            "x\xef\xbf\xbd"
            "y");
  EXPECT_EQ((*back)["ok"], "\xef\xbf\xbd");
}

TEST(ZarrJsonTest, KeysThatReadLikeNonFiniteMarkersStayKeys) {
  // The writer stands NaN in for a marker string; a key spelled like that
  // marker must not become a bare NaN (which no JSON reader takes as a key).
  auto j = ParseJson(R"({"\u0001slab:NaN\u0001": NaN, "k": ["\u0001slab:Infinity\u0001"]})", "t");
  ASSERT_TRUE(j.has_value());
  const std::string text = DumpJson(*j);
  EXPECT_EQ(text.find("NaN:"), std::string::npos) << text;
  // Strict JSON once Python's value tokens are read as such.
  auto back = ParseJson(text, "t");
  ASSERT_TRUE(back.has_value()) << text;
  EXPECT_TRUE(std::isnan((*back)["\x01slab:NaN\x01"].get<double>()));
  EXPECT_TRUE(std::isinf((*back)["k"][0].get<double>()));
  // A marker's text inside a longer string (found by fuzz_zarr_metadata: a
  // string that starts with a quote) stays that string.
  for (const char* doc : {R"("\"\u0001slab:NaN\u0001")", R"(["a\"\u0001slab:Infinity\u0001\"b"])",
                          R"({"\\": "\u0001slab:-Infinity\u0001"})"}) {
    auto in = ParseJson(doc, "t");
    ASSERT_TRUE(in.has_value()) << doc;
    const std::string dumped = DumpJson(*in);
    auto out = ParseJson(dumped, "t");
    ASSERT_TRUE(out.has_value()) << doc << " -> " << dumped;
    EXPECT_EQ(out->dump(), in->dump()) << doc << " -> " << dumped;
  }
}

TEST(ZarrJsonTest, MapsAttributeKinds) {
  auto of = [](const char* text) { return *AttributeFromJson(*ParseJson(text, "t")); };
  EXPECT_EQ(of("\"m/s\"").data, "m/s");
  EXPECT_EQ(of("3").dtype, DType::kI8);
  EXPECT_EQ(of("18446744073709551615").dtype, DType::kU8);
  EXPECT_EQ(of("2.5").dtype, DType::kF8);
  EXPECT_EQ(of("true").dtype, DType::kI1);
  EXPECT_EQ(of("[1, 2, 3]").count(), 3u);
  EXPECT_EQ(of("[1, 2.5]").dtype, DType::kF8);
  EXPECT_EQ(of("[true, false]").dtype, DType::kI1);
  for (const char* text : {"[\"time\",\"lat\"]", "{\"a\":1}", "null", "[]", "[[1],[2]]", "[1,true]"}) {
    Attribute a = of(text);
    EXPECT_EQ(a.kind, Attribute::Kind::kString) << text;
    EXPECT_EQ(*ParseJson(a.data, "t"), *ParseJson(text, "t")) << text;
  }
  EXPECT_EQ(AttributeToJson(of("[1, 2, 3]")), Json({1, 2, 3}));
  EXPECT_EQ(AttributeToJson(of("7")), Json(7));
  std::string big = "\"" + std::string(kMaxAttributeBytes + 1, 'x') + "\"";
  EXPECT_FALSE(AttributeFromJson(*ParseJson(big, "t")).has_value());
}

// The v2 fill_value is the missing-value marker or null, never the storage
// fill value (which xarray would mask); unstored chunks are written unless
// fill_value is the storage fill value.
TEST(ZarrExportFillTest, V2FillValueIsTheMarkerOrNull) {
  DatasetInfo info;
  info.dtype = DType::kI2;
  const int16_t seven = 7;
  info.fill.assign(reinterpret_cast<const char*>(&seven), 2);
  ExportFill none = FillForExport(info, nullptr, 2);
  EXPECT_TRUE(none.value.is_null());
  EXPECT_TRUE(none.every_chunk);
  EXPECT_FALSE(none.marker_used);
  // A marker of another type converts exactly.
  const double minus = -9999;
  Attribute f8 = Attribute::Numbers(DType::kF8, std::string(reinterpret_cast<const char*>(&minus), 8));
  ExportFill m = FillForExport(info, &f8, 2);
  EXPECT_EQ(m.value, Json(-9999));
  EXPECT_TRUE(m.marker_used);
  EXPECT_TRUE(m.every_chunk);  // -9999 is not the storage fill 7
  const int64_t same = 7;
  Attribute i8 = Attribute::Numbers(DType::kI8, std::string(reinterpret_cast<const char*>(&same), 8));
  ExportFill s = FillForExport(info, &i8, 2);
  EXPECT_EQ(s.value, Json(7));
  EXPECT_FALSE(s.every_chunk);
  // A marker that does not fit the dtype (or is not one number) is not used.
  const double big = 1e6, half = 0.5;
  Attribute too_big = Attribute::Numbers(DType::kF8, std::string(reinterpret_cast<const char*>(&big), 8));
  Attribute frac = Attribute::Numbers(DType::kF8, std::string(reinterpret_cast<const char*>(&half), 8));
  EXPECT_TRUE(FillForExport(info, &too_big, 2).value.is_null());
  EXPECT_TRUE(FillForExport(info, &frac, 2).value.is_null());
  Attribute text = Attribute::String("-9999");
  EXPECT_TRUE(FillForExport(info, &text, 2).value.is_null());
  // v3 requires a fill value: the storage fill, and no chunk is forced.
  ExportFill v3 = FillForExport(info, &f8, 3);
  EXPECT_EQ(v3.value, Json(7));
  EXPECT_FALSE(v3.every_chunk);
}

TEST(ZarrExportFillTest, FloatMarkersKeepNaN) {
  DatasetInfo info;
  info.dtype = DType::kF4;
  const float nan = std::nanf("");
  info.fill.assign(reinterpret_cast<const char*>(&nan), 4);
  const double dnan = std::nan("");
  Attribute marker = Attribute::Numbers(DType::kF8, std::string(reinterpret_cast<const char*>(&dnan), 8));
  ExportFill f = FillForExport(info, &marker, 2);
  EXPECT_EQ(f.value, Json("NaN"));
  EXPECT_FALSE(f.every_chunk);
}

}  // namespace
}  // namespace slabfs::tools::convert
